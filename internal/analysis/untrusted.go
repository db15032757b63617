package analysis

import (
	"regexp"
	"strings"
	"unicode"
)

// Text from inspected systems (log lines, event messages, commit messages,
// configuration values) is data. Where it enters a finding it goes through
// quoteUntrusted, so that it can only ever appear as a marked quotation:
//
//   - control, format and bidirectional-override characters are dropped
//     and white space is collapsed (no hidden text, no fake line breaks);
//   - the quotation marks QuoteOpen and QuoteClose are taken out of the
//     text, so a quotation cannot be closed early by the text itself;
//   - it is clipped to 200 bytes.
//
// Reports (services/delivery) move every QuoteOpen…QuoteClose span of a
// conclusion into an evidence block attributed to its pins, so quoted text
// never reads as the conclusion's own words.
const (
	QuoteOpen  = "“"
	QuoteClose = "”"
)

// sanitizeUntrusted drops characters that could hide or restructure text.
func sanitizeUntrusted(s string) string {
	s = strings.NewReplacer(QuoteOpen, "\"", QuoteClose, "\"").Replace(s)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == unicode.ReplacementChar:
			return -1
		}
		return r
	}, s)
}

// quoteUntrusted is text from an inspected system as a marked quotation.
func quoteUntrusted(s string) string {
	return QuoteOpen + strings.ToValidUTF8(headTail(sanitizeUntrusted(s)), "") + QuoteClose
}

// reInstruction matches text addressed to whoever reads the logs (an
// investigator, an assistant, a model, a pager) instead of describing what
// the system did: a log line written to steer the diagnosis.
var reInstruction = regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|other)\b` +
	`|\b(?:system|assistant|developer|admin)\s+(?:note|prompt|message|instruction)s?\b` +
	`|\bnote\s+to\s+(?:the\s+)?(?:investigator|reader|assistant|model|ai|sre|on-?call)\b` +
	`|\b(?:investigator|assistant|ai|model|llm)\s*[:,]\s*(?:you|the root cause|ignore|report|conclude)\b` +
	`|\byou\s+(?:are|must|should)\s+now\b` +
	`|\bthe\s+(?:real\s+|actual\s+|true\s+)?root\s+cause\s+(?:is|was)\b` +
	`|<!(?:channel|here|everyone)>|(?:^|\s)@(?:channel|here|everyone)\b`)

// instructionLike says whether a line from an inspected system reads as
// instructions to its reader. Such lines are data, never evidence of a
// failure mode: they do not enter the detectors (they stay in their pins).
func instructionLike(s string) bool { return reInstruction.MatchString(s) }

// independentOccurrences counts what a set of matching log lines says on
// its own account: one per distinct message (numbers and ids aside) per
// origin. A line written again and again is one occurrence, however often.
func independentOccurrences(lines []LogLine) int {
	seen := map[string]bool{}
	for _, l := range lines {
		seen[logOrigin(l)+"\x00"+exceptionSig(l.Message)] = true
	}
	return len(seen)
}
