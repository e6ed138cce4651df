package srm_test

import (
	"errors"
	"testing"

	"github.com/asyncstageout/aso/srm"
)

// Outputs of gfal-rm 1.8.0 as observed, and the ways it can misbehave.
func TestInterpretRun(t *testing.T) {
	urls := []string{"mock://h/a", "mock://h/b", "mock://h/c"}
	tests := []struct {
		name    string
		out     srm.RunOutput
		settled int
		wantErr error
		wants   []want
	}{
		{"all deleted", srm.RunOutput{Started: true, Stdout: "mock://h/a\tDELETED\nmock://h/b\tDELETED\nmock://h/c\tDELETED\n"},
			3, nil, []want{{status: srm.StatusDeleted}, {status: srm.StatusDeleted}, {status: srm.StatusDeleted}}},
		{"missing exits 2", srm.RunOutput{Started: true, ExitCode: 2, Stdout: "mock://h/a\tMISSING\nmock://h/b\tDELETED\nmock://h/c\tMISSING\n"},
			3, nil, []want{{status: srm.StatusMissing}, {status: srm.StatusDeleted}, {status: srm.StatusMissing}}},
		{"log lines ignored", srm.RunOutput{Started: true, Stdout: "ERROR something\nmock://h/a\tDELETED\n\nmock://h/b\tDELETED\nmock://h/c\tDELETED"},
			3, nil, []want{{status: srm.StatusDeleted}, {status: srm.StatusDeleted}, {status: srm.StatusDeleted}}},
		{"stops after FAILED", srm.RunOutput{Started: true, ExitCode: 13, Stdout: "mock://h/a\tMISSING\nmock://h/b\tFAILED\n",
			Stderr: "gfal-rm error: 13 (Permission denied) - Permission denied\n"},
			2, nil, []want{{status: srm.StatusMissing}, {status: srm.StatusFailed, errno: 13}}},
		{"directory has no line", srm.RunOutput{Started: true, ExitCode: 21, Stdout: "mock://h/a\tDELETED\n",
			Stderr: "gfal-rm error: 21 (Is a directory) - Can not remove mock://h/b, is a directory\n"},
			2, nil, []want{{status: srm.StatusDeleted}, {status: srm.StatusFailed, errno: 21}}},
		{"errno above 255", srm.RunOutput{Started: true, ExitCode: 44, Stdout: "mock://h/a\tFAILED\n",
			Stderr: "gfal-rm error: 300 (Unknown error 300) - Unknown error 300\n"},
			1, nil, []want{{status: srm.StatusFailed, errno: 300}}},
		{"bulk failure lines", srm.RunOutput{Started: true, ExitCode: 0, Stdout: "mock://h/a\tFAILED: no space\nmock://h/b\tDELETED\nmock://h/c\tDELETED\n"},
			3, nil, []want{{status: srm.StatusFailed}, {status: srm.StatusDeleted}, {status: srm.StatusDeleted}}},
		{"usage error exits 2", srm.RunOutput{Started: true, ExitCode: 2, Stderr: "usage: gfal-rm [-h]\ngfal-rm: error: unrecognized arguments: --x\n"},
			0, srm.ErrGfalRm, []want{{status: srm.StatusSkipped}, {status: srm.StatusSkipped}, {status: srm.StatusSkipped}}},
		{"exit 2 without MISSING", srm.RunOutput{Started: true, ExitCode: 2, Stdout: "mock://h/a\tDELETED\nmock://h/b\tDELETED\nmock://h/c\tDELETED\n"},
			3, srm.ErrGfalRm, []want{{status: srm.StatusDeleted}, {status: srm.StatusDeleted}, {status: srm.StatusDeleted}}},
		{"own timeout", srm.RunOutput{Started: true, ExitCode: 110, Stdout: "mock://h/a\tDELETED\n", Stderr: "Command timed out after 10 seconds!\n"},
			2, srm.ErrTimeout, []want{{status: srm.StatusDeleted}, {status: srm.StatusFailed}, {status: srm.StatusSkipped}}},
		{"killed", srm.RunOutput{Started: true, ExitCode: -1, Killed: srm.ErrTimeout},
			1, srm.ErrTimeout, []want{{status: srm.StatusFailed}, {status: srm.StatusSkipped}, {status: srm.StatusSkipped}}},
		{"not started", srm.RunOutput{Killed: srm.ErrGfalRm},
			0, srm.ErrGfalRm, []want{{status: srm.StatusSkipped}, {status: srm.StatusSkipped}, {status: srm.StatusSkipped}}},
		{"exit 0 but lines missing", srm.RunOutput{Started: true, Stdout: "mock://h/a\tDELETED\n"},
			2, srm.ErrGfalRm, []want{{status: srm.StatusDeleted}, {status: srm.StatusFailed}, {status: srm.StatusSkipped}}},
		{"error after every URL", srm.RunOutput{Started: true, ExitCode: 5, Stdout: "mock://h/a\tDELETED\nmock://h/b\tDELETED\nmock://h/c\tDELETED\n",
			Stderr: "gfal-rm error: 5 (Input/output error) - Input/output error\n"},
			3, srm.ErrGfalRm, []want{{status: srm.StatusDeleted}, {status: srm.StatusDeleted}, {status: srm.StatusDeleted}}},
		{"crash after FAILED", srm.RunOutput{Started: true, ExitCode: 1, Stdout: "mock://h/a\tFAILED\n", Stderr: "Traceback (most recent call last):\n  ...\nKeyError: 'x'\n"},
			1, srm.ErrGfalRm, []want{{status: srm.StatusFailed}, {status: srm.StatusSkipped}, {status: srm.StatusSkipped}}},
		{"unknown status for our URL", srm.RunOutput{Started: true, Stdout: "mock://h/a\tRMDIR\n"},
			1, srm.ErrGfalRm, []want{{status: srm.StatusFailed}, {status: srm.StatusSkipped}, {status: srm.StatusSkipped}}},
		{"line for another URL", srm.RunOutput{Started: true, Stdout: "mock://h/a\tDELETED\nmock://h/c\tDELETED\n"},
			2, srm.ErrGfalRm, []want{{status: srm.StatusDeleted}, {status: srm.StatusFailed}, {status: srm.StatusSkipped}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, settled, err := srm.InterpretRun(urls, tt.out)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if settled != tt.settled {
				t.Errorf("settled %d, want %d", settled, tt.settled)
			}
			checkResults(t, urls, got, tt.wants)
		})
	}
}
