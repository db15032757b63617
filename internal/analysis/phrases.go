package analysis

import "regexp"

// Failure phrase kinds: what a log line says failed, in the words the
// detectors read. The critic classifies the lines it reviews with the same
// phrases (FailurePhrase), so the brain and the critic agree on what a
// line means.
const (
	PhraseDNS    = "dns"
	PhraseCert   = "cert"
	PhraseDisk   = "disk"
	PhraseCode   = "code"
	PhraseConfig = "config"
)

var failurePhrases = map[string][]*regexp.Regexp{
	PhraseDNS:    {dnsNXRe, dnsServerRe},
	PhraseCert:   {signatureRe(ModeCertExpiry)},
	PhraseDisk:   {signatureRe(ModeVolumeFull)},
	PhraseCode:   {codeLogRe},
	PhraseConfig: {configLogRe},
}

func signatureRe(mode string) *regexp.Regexp {
	for _, s := range logSignatures {
		if s.mode == mode {
			return s.re
		}
	}
	panic("analysis: no log signature for " + mode)
}

// FailurePhrase reports whether line carries a failure phrase of kind; an
// unknown kind matches nothing.
func FailurePhrase(kind, line string) bool {
	for _, re := range failurePhrases[kind] {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}
