package agent

import (
	"context"
	"regexp"

	"github.com/asyncstageout/aso/fts"
	"github.com/asyncstageout/aso/state"
)

// duplicateEntry finds the key the database refused in FTS's "The
// submission is duplicated" message: MySQL's "Duplicate entry '<key>' for
// key 'dest_surl_uuid'" (the key column's name varies with the server's
// version; the value is the UUID FTS derives from a destination URL).
var duplicateEntry = regexp.MustCompile(`Duplicate entry '([0-9A-Fa-f-]{36})'`)

// destinationTaken settles p, a job FTS answered with 409 and then showed
// no job for its sid: not the 409 of a sid submitted before, but FTS's
// other one, "The submission is duplicated": a file of the job writes a
// destination that an active FTS file already writes (a server with
// fts3.CheckDuplicates), and FTS stored nothing. Transfers whose kill was
// requested meanwhile are released first (see releaseKilled).
//
// The file is the one whose destination's dest_surl_uuid (uuid5 of FTS's
// BASE_ID and the URL, fts.DestinationUUID) the database's message names:
// it fails, retried after the cool-off, by when the other file may have
// ended, and the rest of the job is sent again at once with the same sid
// (FTS stored none of it). When no file of the job has the UUID the message
// names (a message of another form, a job recovered from the store), the
// job's transfers are released without penalty and go one per job from
// then on in this run, as Rucio resubmits file by file, so that a busy
// destination holds back only its own transfer.
func (a *Agent) destinationTaken(work context.Context, p *pendingJob, ps *PassStats) {
	ctx, cancel := context.WithTimeout(work, a.cfg.PhaseTimeout)
	defer cancel()
	if !a.releaseKilled(ctx, p, ps) {
		return // all killed meanwhile: released, the next claim ends them
	}
	busy := a.collided(p)
	log := a.log.WithField(FieldPhase, "submit").WithField("sid", p.sid)
	if len(busy) == 0 && len(p.ids) > 1 {
		for _, id := range p.ids {
			a.solo[id] = true
		}
		log.WithField("files", len(p.ids)).Warn("FTS refused the job as duplicated though it has no job with its sid; sending its files one per job")
		a.releaseJob(ctx, p, "FTS refused the job with 409 but has no job with its sid: a file of it writes the destination of an active FTS transfer; sent again one file per job: "+p.conflict, ps)
		return
	}
	if len(busy) == 0 {
		busy = map[string]bool{p.ids[0]: true}
	}
	var aborts []state.Abort
	rest := p.ids[:0:0]
	for _, t := range a.book.get(p.ids) {
		if busy[t.ID] {
			aborts = append(aborts, state.Abort{Transfer: t, Reason: "FTS refused the submission: another active FTS transfer writes this destination: " + p.conflict,
				ErrorClass: string(fts.ClassDestinationBusy)})
		} else {
			rest = append(rest, t.ID)
		}
	}
	if len(rest) == 0 {
		a.book.forget(p.sid)
	}
	a.abort(ctx, aborts, ps)
	if len(rest) > 0 {
		p.keep(rest)
		log.WithField("files", len(rest)).Info("FTS refused the job for a destination an active FTS transfer writes; sending the rest again")
		a.resubmit(work, p, ps)
	}
}

// collided returns the transfers of p whose destination has the
// dest_surl_uuid that FTS's message names, if any.
func (a *Agent) collided(p *pendingJob) map[string]bool {
	m := duplicateEntry.FindStringSubmatch(p.conflict)
	if m == nil {
		return nil
	}
	busy := map[string]bool{}
	for _, f := range p.files {
		if fts.DestinationUUID(f.dst) == m[1] {
			busy[f.id] = true
		}
	}
	return busy
}
