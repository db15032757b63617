package analysis

import (
	"regexp"
	"strings"
	"time"
)

// A failure the retry absorbed. A line that fails and says it will try
// again ("read timeout (retry 1 of 3)", "returned error, retrying after
// 720ms", "sync retry 1/5 ... queued"), followed by its own origin's report
// of success ("read ok on retry", "prune finished ... OK", "sync ok: 3
// queued permits uploaded") and by no further failure of that origin, is a
// transient the client handled: not a failure signal. One retry line that
// is never followed by success, or is followed by more failures, still is.

var (
	// reRetryAnnounce: a line that says its operation will be tried again.
	reRetryAnnounce = regexp.MustCompile(`(?i)\bretry(?:ing)?\s*\(?\s*\d+\s*(?:/|of)\s*\d+|\bretrying\b|\bwill (?:be )?retr(?:y|ied)\b|\bretry(?:ing)? (?:in|after)\b`)
	// reSucceeded: a line that reports an operation done.
	reSucceeded = regexp.MustCompile(`(?i)\b(?:ok|succeeded|successful(?:ly)?|success|completed?|finished|done|uploaded|recovered|restored)\b`)
)

// retryWindow bounds how long after a retried failure the success that
// absorbs it may come.
const retryWindow = 30 * time.Minute

// absorbedRetry: l announces a retry, and its origin later reports
// success within retryWindow with no failure of its own after l.
func (ev *Evidence) absorbedRetry(l LogLine) bool {
	if l.Timestamp == nil || !reRetryAnnounce.MatchString(l.Message) {
		return false
	}
	ev.retryOnce.Do(ev.findAbsorbedRetries)
	return ev.absorbed[retryKey(l)]
}

func retryKey(l LogLine) string { return keyTime(l.Timestamp) + "|" + l.Pod + "|" + l.Message }

// findAbsorbedRetries does absorbedRetry's work once per evidence model.
func (ev *Evidence) findAbsorbedRetries() {
	ev.absorbed = map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || !reRetryAnnounce.MatchString(l.Message) {
			continue
		}
		origin := ev.logService(l)
		if origin == "" {
			continue
		}
		succeeded, failedAgain := false, false
		for _, o := range ev.Logs {
			if o.Timestamp == nil || !o.Timestamp.After(*l.Timestamp) || !strings.EqualFold(ev.logService(o), origin) {
				continue
			}
			lv := logLevel(o.LogLine)
			retried := reRetryAnnounce.MatchString(o.Message)
			switch {
			case (lv == "ERROR" || lv == "FATAL") && !reRetrySucceeded.MatchString(o.Message) || lv == "WARN" && !retried && !reRetrySucceeded.MatchString(o.Message) && failedRequestLine(o.Message):
				failedAgain = true
			case lv != "ERROR" && lv != "FATAL" && lv != "WARN" && (reSucceeded.MatchString(o.Message) || reRetrySucceeded.MatchString(o.Message)) && o.Timestamp.Sub(*l.Timestamp) <= retryWindow:
				succeeded = true
			}
		}
		if succeeded && !failedAgain {
			ev.absorbed[retryKey(l)] = true
		}
	}
}
