package analysis

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A fourth row of the change table: a contract another service changed.
// A consumer that fails on a field or symbol of what it receives (a
// KeyError on 'species_code', a missing field `orderRef`) names, in its
// error, the piece of the contract that moved. When a commit of another
// service (the producer) before the onset names that same symbol (in its
// message, description or files), the producer's change is the cause: a
// code defect across a service boundary, the commit its entity. The tie is
// the symbol, written the way code writes it, in either case convention.

// contractLookback bounds how long a contract change waits for the
// consumer that trips on it.
const contractLookback = 7 * 24 * time.Hour

// reQuotedSymbol: a symbol quoted in an error ('x', "x", `x`), the way
// runtimes and parsers name the key or field they could not find.
var reQuotedSymbol = regexp.MustCompile("['\"`]([A-Za-z_][A-Za-z0-9_.]{3,63})['\"`]")

// contractSymbols are the code symbols (snake_case, camelCase, dotted)
// the failing workload's error lines quote, at most eight.
func (ev *Evidence) contractSymbols(lead Finding) []string {
	var out []string
	names := ev.targetNames()
	for _, t := range ev.failureTexts(lead) {
		for _, m := range reQuotedSymbol.FindAllStringSubmatch(t, -1) {
			if id := m[1]; codeSymbol(id) && !namesTarget(id, names) {
				out = appendUnique(out, id)
			}
			if len(out) == 8 {
				return out
			}
		}
	}
	return out
}

// symbolKey folds a symbol's case convention: species_code, speciesCode
// and SpeciesCode are one key.
func symbolKey(id string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(id))
}

// ContractSymbols are the quoted symbols of the leading code or data
// failure: the brain reads every service's commits for them.
func (r Result) ContractSymbols() []string {
	if r.ev == nil || len(r.Findings) == 0 {
		return nil
	}
	lead := r.Findings[0]
	if lead.Healthy || lead.Category != catCode && lead.Category != catData {
		return nil
	}
	return r.ev.contractSymbols(lead)
}

// contractChange: the lead is a code or data failure whose errors quote a
// symbol, and a commit of another service before the onset names it.
func (ev *Evidence) contractChange(lead Finding, sc changeScan) (Finding, bool) {
	if lead.Healthy || lead.Category != catCode && lead.Category != catData || !sc.hasOnset {
		return Finding{}, false
	}
	syms := ev.contractSymbols(lead)
	if len(syms) == 0 {
		return Finding{}, false
	}
	own := strings.ToLower(lead.Entity[strings.LastIndex(lead.Entity, "/")+1:])
	type hit struct {
		c   Commit
		sym string
	}
	var hits []hit
	for _, c := range ev.Commits {
		if c.Removed || c.Timestamp == nil || c.Timestamp.After(sc.onset) || sc.onset.Sub(*c.Timestamp) > contractLookback {
			continue
		}
		if svc := strings.ToLower(c.Service); svc == "" || svc == own || strings.HasPrefix(own, svc+"-") {
			continue // the failing service's own history is the release rows'
		}
		text := c.Message + "\n" + c.Summary
		for _, f := range c.Files {
			text += "\n" + f.Path
		}
		keys := map[string]bool{}
		for _, id := range reIdentifier.FindAllString(text, -1) {
			keys[symbolKey(id)] = true
		}
		for _, s := range syms {
			if strings.Contains(text, s) || keys[symbolKey(s)] {
				hits = append(hits, hit{c, s})
				break
			}
		}
	}
	if len(hits) == 0 {
		return Finding{}, false
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].c.Timestamp.After(*hits[j].c.Timestamp) })
	h := hits[0]
	f := Finding{Mode: ModeLimitChange, Detector: ModeLimitChange, Category: catCode, Entity: "commit/" + short(h.c.SHA), Score: min(0.95, lead.Score+0.05)}
	if commitKind(h.c.Commit) == changeConfig {
		// The commit changed settings only (a database parameter, a
		// topic's setting): the mechanism is a setting, not code.
		f.Category = catConfig
	}
	f.Statement = fmt.Sprintf("Commit %s of %s (%s), %s before the onset at %s, changed %s, which the failure of %s names: %s",
		short(h.c.SHA), h.c.Service, clip(h.c.Message, 80), durHuman(sc.onset.Sub(*h.c.Timestamp)), hhmm(&sc.onset), quote(h.sym), own, strings.TrimSuffix(lead.Statement, "."))
	f.validated(fmt.Sprintf("The failure quotes %s and commit %s of %s names it", quote(h.sym), short(h.c.SHA), h.c.Service), h.c.Cite)
	f.validated(commitText(h.c), h.c.Cite)
	f.adoptLead(lead,
		[]string{fmt.Sprintf("Commit %s changes %s in what %s produces", short(h.c.SHA), h.sym, h.c.Service), fmt.Sprintf("%s still expects the old %s and fails on it", own, h.sym)},
		[]string{fmt.Sprintf("Roll back or fix commit %s of %s (keep %s compatible for its consumers)", short(h.c.SHA), h.c.Service, h.sym), "Version the contract between the services, and test consumers against the producer's changes"},
		[]string{"code", "contract"}, "the consumer's failure is what the producer's change to the contract does")
	return f, true
}
