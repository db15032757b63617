package analysis

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Commit specificity: among the commits of a release, the one whose own
// content the failure names is the culprit, whatever its change type. A
// stack frame or error naming a file the commit touched weighs most; an
// identifier of its message or summary (a key, a field, a function) that
// the errors quote weighs less. Change-type preferences only break ties
// (pickCommit).

// reIdent: identifier-like tokens (snake_case, camelCase, dotted keys).
var reIdent = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]+`)

// commitSpecificity scores how precisely the error texts point at c and
// says why.
func commitSpecificity(c Commit, errTexts []string) (float64, string) {
	score := 0.0
	var why []string
	for _, fl := range c.Files {
		base := path.Base(fl.Path)
		if len(base) < 4 || base == "." {
			continue
		}
		for _, t := range errTexts {
			if strings.Contains(t, base) {
				score += 3
				why = append(why, fmt.Sprintf("it changed %s, which the errors name (%s)", fl.Path, clip(t, 120)))
				break
			}
		}
	}
	seen := map[string]bool{}
	for _, id := range reIdent.FindAllString(c.Message+" "+c.Summary+" "+c.Diff, -1) {
		if len(id) < 5 || seen[id] {
			continue
		}
		seen[id] = true
		for _, t := range errTexts {
			if strings.Contains(t, id) {
				score++
				why = append(why, fmt.Sprintf("its change mentions %s, which the errors quote", id))
				break
			}
		}
		if len(seen) > 200 {
			break
		}
	}
	return score, strings.Join(why, "; ")
}

// specificCommit returns the commit the errors single out: the highest
// specificity, strictly above every other commit's.
func specificCommit(commits []Commit, errTexts []string) (*Commit, string) {
	if len(commits) < 2 || len(errTexts) == 0 {
		if len(commits) == 1 {
			if s, why := commitSpecificity(commits[0], errTexts); s > 0 {
				return &commits[0], why
			}
		}
		return nil, ""
	}
	best, second := -1.0, -1.0
	var bi int
	var bwhy string
	for i := range commits {
		s, why := commitSpecificity(commits[i], errTexts)
		switch {
		case s > best:
			second, best, bi, bwhy = best, s, i, why
		case s > second:
			second = s
		}
	}
	if best <= 0 || best == second {
		return nil, ""
	}
	return &commits[bi], bwhy
}

func messagesOf(lines []LogLine) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, l.Message)
	}
	return out
}
