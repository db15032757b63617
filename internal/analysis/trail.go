package analysis

import (
	"fmt"
	"github.com/rcamesh/rcamesh/internal/textutil"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/rcamesh/rcamesh/internal/target"
)

// A signal extractor of the change ledger: the trail of the object the
// errors name. A failing call often names the object it failed on by an
// identifier (a key's, a queue's or a bucket's UUID, a cloud resource's
// ARN); what another system logged about that identifier before the
// errors (an audit record, a janitor's sweep, a rotation) is a change to
// that object, the most specific change there is: its identifier is in
// the symptoms.

var (
	// reUUID: an RFC 4122 identifier, as clouds and databases name
	// objects.
	reUUID = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	// reARNResource: the resource part of an Amazon Resource Name.
	reARNResource = regexp.MustCompile(`\barn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d*:([A-Za-z0-9_.:/+=@-]+)`)
)

// maxTrailObjects bounds the identifiers followed per reading.
const maxTrailObjects = 2

// trailLookBack: a record this long before the onset still explains it
// (a key disabled the day before, a credential rotated at midnight).
const trailLookBack = 72 * time.Hour

// objectIDs are the identifiers the texts name objects by: UUIDs, and the
// last part of an ARN's resource when it is no UUID (a queue's or a
// role's name), at most maxTrailObjects, first named first.
func objectIDs(texts []string) []string {
	var out []string
	for _, t := range texts {
		for _, m := range reARNResource.FindAllStringSubmatch(t, -1) {
			res := strings.TrimRight(m[1], ".,;:)")
			last := res[strings.LastIndexAny(res, "/:")+1:]
			if reUUID.MatchString(last) || len(last) < 6 {
				continue // the UUID is taken below
			}
			out = appendUnique(out, last)
		}
		for _, id := range reUUID.FindAllString(t, -1) {
			out = appendUnique(out, strings.ToLower(id))
		}
		if len(out) >= maxTrailObjects {
			return out[:maxTrailObjects]
		}
	}
	return out
}

// trailChanges are the lines other systems logged about an object the
// symptoms name by its identifier, before the onset: each a change to
// that object, of the kind its words say (a setting when they say
// nothing else: a key disabled, a credential revoked, a policy edited).
// Error lines are symptoms, not changes; the failing entity's own lines
// are its account, not another system's record.
func (ev *Evidence) trailChanges(own string, onset *time.Time, symptoms []string) []changeRef {
	if onset == nil {
		return nil
	}
	ids := objectIDs(symptoms)
	if len(ids) == 0 {
		return nil
	}
	var out []changeRef
	seen := map[string]bool{}
	for _, l := range ev.Logs {
		if l.Timestamp == nil || l.Timestamp.After(onset.Add(time.Minute)) || onset.Sub(*l.Timestamp) > trailLookBack || isErrorLog(l.LogLine) {
			continue
		}
		if own != "" && strings.EqualFold(ev.logService(l), own) {
			continue
		}
		low := strings.ToLower(l.Message)
		id := ""
		for _, x := range ids {
			if strings.Contains(low, strings.ToLower(x)) {
				id = x
				break
			}
		}
		if id == "" || !firstOfTemplate(seen, l.Message) {
			continue
		}
		kind := changeKindOf(l.Message)
		if kind == "" || kind == changeCode {
			kind = changeConfig
		}
		out = append(out, changeRef{
			text: fmt.Sprintf("%s recorded by %s at %s about %s, which the errors name: %s", kind+" change", logOrigin(l), hhmm(l.Timestamp), id, quote(clip(l.Message, 300))),
			at:   l.Timestamp, kind: kind, cite: l.Cite, object: id,
		})
	}
	return out
}

// TrailObjects are the identifiers and URL hosts the strongest abnormal
// entity's errors name objects by (observedNames): what other systems
// logged about them is the next evidence, wherever it was logged. Nil for
// a healthy lead.
func (r Result) TrailObjects() []string {
	if r.ev == nil || len(r.Findings) > 0 && r.Findings[0].Healthy {
		return nil
	}
	cs := r.ev.anomalyCandidates()
	if len(cs) == 0 {
		return nil
	}
	return observedNames(cs[0].symptomTexts())
}

// maxObservedNames bounds the names whose observations are searched.
const maxObservedNames = 3

// observedNames are the identifiers (objectIDs) and URL hosts the texts
// name, at most maxObservedNames.
func observedNames(texts []string) []string {
	names := objectIDs(texts)
	for _, t := range texts {
		names = appendUnique(names, target.URLHosts(t, 3)...)
	}
	for _, t := range texts {
		names = appendUnique(names, publicAddrs(t)...)
	}
	return names[:min(len(names), maxObservedNames)]
}

// reIPv4: a dotted IPv4 address as a whole token.
var reIPv4 = regexp.MustCompile(`(?:^|[^0-9.])((?:\d{1,3}\.){3}\d{1,3})(?:$|[^0-9.])`)

// publicAddrs are the IPv4 addresses outside the private, loopback and
// link-local ranges that text names: a client or peer from outside, which
// an edge proxy or a firewall logs too.
func publicAddrs(text string) []string {
	var out []string
	for _, m := range reIPv4.FindAllStringSubmatch(text, -1) {
		ip := net.ParseIP(m[1])
		if ip == nil || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
			continue
		}
		out = appendUnique(out, m[1])
	}
	return out
}

// maxObservations bounds the other systems' lines quoted about the
// objects the errors name.
const maxObservations = 2

// observations are the lines other systems logged, around the onset (the
// change look-back before, contextAfter after), about an object the
// failing entity's errors name: a URL's host or an identifier (objectIDs).
// A prober's verdict on the host, an audit record of the key: what an SRE
// reads beside the errors. Error lines and the entity's own are not
// observations; the nearest come first.
func (ev *Evidence) observations(own string, onset *time.Time, symptoms []string) []LogLine {
	if onset == nil {
		return nil
	}
	names := observedNames(symptoms)
	if len(names) == 0 {
		return nil
	}
	return ev.nearestLines(*onset, changeLookback, maxObservations, func(l LogLine) bool {
		if own != "" && strings.EqualFold(ev.logService(l), own) {
			return false
		}
		low := strings.ToLower(l.Message)
		for _, n := range names {
			if strings.Contains(low, strings.ToLower(n)) {
				return true
			}
		}
		return false
	})
}

// maxErrorAccount bounds the failing entity's own lines quoted as its
// account of its errors.
const maxErrorAccount = 2

// errorAccount is what the failing entity itself logged, not as an error,
// around the onset about what its errors name (an address, an
// identifier): how it treats that client, key or peer ("client 10.20.0.4
// is not in trusted_ips; using the connection address"). Its error lines'
// own templates are the symptom, not the account.
func (ev *Evidence) errorAccount(own string, onset *time.Time, errLines []LogLine) []LogLine {
	if onset == nil || own == "" || len(errLines) == 0 {
		return nil
	}
	var texts []string
	errTemplates := map[string]bool{}
	for _, l := range errLines {
		k := logTemplate(l.Message)
		if !errTemplates[k] {
			errTemplates[k] = true
			texts = append(texts, l.Message)
		}
	}
	names := objectIDs(texts)
	for _, t := range texts {
		for _, m := range reIPv4.FindAllStringSubmatch(t, -1) {
			names = appendUnique(names, m[1])
		}
	}
	if len(names) == 0 {
		return nil
	}
	names = names[:min(len(names), maxObservedNames)]
	return ev.nearestLines(*onset, changeLookback, maxErrorAccount, func(l LogLine) bool {
		if !strings.EqualFold(ev.logService(l), own) || errTemplates[logTemplate(l.Message)] {
			return false
		}
		low := strings.ToLower(l.Message)
		for _, n := range names {
			if containsToken(low, strings.ToLower(n)) {
				return true
			}
		}
		return false
	})
}

// containsToken: s holds tok not as part of a longer number or word
// ("10.20.0.4" is not in "10.20.0.41"; a dot around it ends a sentence).
func containsToken(s, tok string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(tok)
		before := j == 0 || !tokenByte(s[j-1])
		after := end == len(s) || !tokenByte(s[end])
		if before && after {
			return true
		}
		i = j + 1
	}
}

// tokenByte: a byte of a word or of a dashed name.
func tokenByte(b byte) bool { return textutil.IsWordByte(b) || b == '-' }
