//go:build !linux

package holder

import "errors"

// procStat is not known without Linux's /proc: owner IDs then carry no
// start time, and holders are judged by their pid alone.
func procStat(int) (uint64, byte, error) {
	return 0, 0, errors.New("no /proc on this system")
}

// machineTag is "" without Linux's /proc.
func machineTag() string { return "" }
