package javaflow

import (
	"regexp"
	"strconv"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

func (a *Analysis) claim(id, txt, status string, steps ...Step) {
	a.Claims = append(a.Claims, Claim{ID: id, Text: txt, Status: status, Steps: steps})
}

// judge turns what the interpreter saw at the sink into a verdict with
// claims, following the category's checklist.
func judge(a *Analysis, in *Interp, f *File, sink *sitter.Node, cat string) {
	a.Unknowns = append(a.Unknowns, in.Unknowns...)
	s := in.Sink
	if !s.Reached {
		a.Verdict = NeedsReview
		a.Reason = "the interpretation of the method never reached the sink"
		a.Unknowns = append(a.Unknowns, "whether the sink at line "+itoa(int64(a.Sink.Line))+" is reachable")
		a.Next = append(a.Next, "fetch_code "+f.Path+":"+itoa(int64(a.Sink.Line-20))+"-"+itoa(int64(a.Sink.Line+5)))
		return
	}
	a.claim("reach", "the sink call runs on a feasible path of the method", "supported", a.Sink)
	switch {
	case TaintCategories[cat]:
		judgeTaint(a, in, cat)
	case cat == "weakrand":
		judgeRandom(a, in, f, sink)
	case cat == "hash" || cat == "crypto":
		judgeAlgorithm(a, in, cat)
	case cat == "securecookie" || cat == "httponly":
		judgeCookie(a, in, f, sink, cat)
	case cat == "samesite":
		m := enclosing(sink, "method_declaration", "constructor_declaration")
		if m != nil {
			if loc := sameSiteRe.FindStringIndex(text(f, m)); loc != nil {
				line := lineOf(m) + strings.Count(text(f, m)[:loc[0]], "\n")
				a.Verdict = FalsePositive
				a.Reason = "the method writes a Set-Cookie header with a SameSite attribute"
				a.claim("flag", a.Reason, "supported", Step{File: f.Path, Line: line, What: "Set-Cookie header with SameSite"})
				return
			}
		}
		a.Verdict = TruePositive
		a.Reason = "the servlet Cookie API has no SameSite attribute and the method writes no Set-Cookie header with SameSite"
		a.claim("flag", a.Reason, "supported", a.Sink)
	default:
		a.Verdict = NeedsReview
		a.Reason = "no checklist for category " + cat
		a.Unknowns = append(a.Unknowns, "a checklist for "+cat)
	}
}

// injectedArgs are the sink's arguments that are code (SQL, filter,
// expression) rather than bound parameters, which the API escapes.
func injectedArgs(cat, name string, args []*Val) ([]*Val, string) {
	switch {
	case cat == "sqli" && len(args) > 1 && name != "batchUpdate" && name != "addBatch":
		return args[:1], "the SQL text; the other arguments are bound parameters"
	case cat == "ldapi" && name == "search" && len(args) == 4:
		return args[:2], "the name and filter; the filter arguments are escaped by JNDI"
	case cat == "xpathi" && name == "evaluate" && len(args) > 1:
		return args[:1], "the expression"
	}
	return args, ""
}

func judgeTaint(a *Analysis, in *Interp, cat string) {
	args, why := injectedArgs(cat, in.sinkName, in.Sink.Args)
	if why != "" {
		a.claim("api", "only "+why+" can inject", "supported", a.Sink)
	}
	vals := append([]*Val(nil), args...)
	if cat == "xpathi" || cat == "cmdi" {
		// a compiled expression or a prepared command carries its input
		if r := in.Sink.Recv; r != nil && r.T != nil {
			vals = append(vals, r)
		}
	}
	var unsafe, sanitised, assumed []*Val
	seen := map[*Obj]bool{}
	for _, v := range vals {
		for _, l := range leaves(v, seen, nil) {
			switch {
			case contains(l.San, cat):
				sanitised = append(sanitised, l)
			case l.T.Assumed:
				assumed = append(assumed, l)
			default:
				unsafe = append(unsafe, l)
			}
		}
	}
	switch {
	case len(unsafe) > 0:
		tr := unsafe[0].T.Trail
		a.Verdict = TruePositive
		a.Reason = "attacker-controlled input reaches the " + cat + " sink without a " + cat + " sanitiser"
		a.claim("source", "the value comes from an attacker-controlled request source", "supported", tr[0])
		a.claim("path", "it flows to the sink's arguments on a feasible path", "supported", append(append([]Step(nil), tr...), a.Sink)...)
		a.claim("sanitiser", "no sanitiser for "+cat+" is applied on the way", "supported", a.Sink)
	case len(assumed) > 0:
		a.assumed = assumed
		a.Verdict = NeedsReview
		tr := assumed[0].T.Trail
		a.Reason = "a method parameter reaches the sink; whether callers pass attacker input is unknown"
		a.claim("source", "the sink's argument comes from a method parameter", "tentative", tr...)
		a.Unknowns = append(a.Unknowns, "whether the callers of the method pass attacker-controlled input")
		a.Next = append(a.Next, "search_codebase callers of the enclosing method")
	case len(sanitised) > 0:
		a.Verdict = FalsePositive
		tr := sanitised[0].T.Trail
		var enc []Step
		for _, s := range tr {
			if strings.HasPrefix(s.What, "encoded by") {
				enc = append(enc, s)
			}
		}
		a.Reason = "the attacker-controlled input is encoded for " + cat + " before the sink"
		a.claim("source", "the value comes from an attacker-controlled request source", "supported", tr[0])
		a.claim("sanitiser", "it is sanitised for "+cat+" on every path to the sink", "supported", append(enc, a.Sink)...)
	default:
		a.Verdict = FalsePositive
		a.Reason = "no attacker-controlled value reaches the sink's arguments"
		steps := append([]Step(nil), in.Decisions...)
		desc := "the sink's arguments hold only values the attacker does not control"
		var consts []string
		for _, v := range in.Sink.Args {
			if v.Con {
				consts = append(consts, v.String())
			}
		}
		if len(consts) > 0 {
			desc += " (" + strings.Join(consts, ", ") + ")"
		}
		a.claim("source", desc, "supported", append(steps, a.Sink)...)
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func judgeRandom(a *Analysis, in *Interp, f *File, sink *sitter.Node) {
	class := ""
	var made *Step
	name := callName(f, sink)
	switch {
	case sink.Type() == "object_creation_expression":
		class = name
	case sink.Type() == "local_variable_declaration":
		if r := in.Sink.Result; r != nil && r.O != nil {
			class = r.O.Class
		}
	case name == "random":
		if r := in.Sink.Recv; r != nil && r.K == KClass && r.S == "Math" {
			class = "Math.random"
		}
	default:
		if r := in.Sink.Recv; r != nil && r.O != nil {
			class = r.O.Class
			if r.O.AlgStep.Line > 0 {
				made = &r.O.AlgStep
			}
		}
	}
	if r := in.Sink.Result; made == nil && r != nil && r.O != nil && r.O.AlgStep.Line > 0 {
		made = &r.O.AlgStep
	}
	steps := []Step{a.Sink}
	if made != nil && *made != a.Sink {
		steps = append([]Step{*made}, steps...)
	}
	switch class {
	case "Random", "Math.random", "ThreadLocalRandom":
		a.Verdict = TruePositive
		a.Reason = "the random value comes from " + class + ", a predictable generator"
		a.claim("algorithm", "the generator is "+class+" (not cryptographically secure)", "supported", steps...)
	case "SecureRandom":
		a.Verdict = FalsePositive
		a.Reason = "the random value comes from java.security.SecureRandom"
		a.claim("algorithm", "the generator is SecureRandom", "supported", steps...)
	default:
		a.Verdict = NeedsReview
		a.Reason = "the generator's class could not be determined"
		a.Unknowns = append(a.Unknowns, "the class of the generator used at the sink")
	}
}

// weak hash and cipher rules.
var weakHash = map[string]bool{"MD2": true, "MD4": true, "MD5": true, "SHA": true, "SHA1": true, "SHA-1": true, "SHA-0": true, "RIPEMD128": true}
var strongHash = map[string]bool{"SHA-224": true, "SHA-256": true, "SHA-384": true, "SHA-512": true, "SHA-512/224": true, "SHA-512/256": true,
	"SHA3-224": true, "SHA3-256": true, "SHA3-384": true, "SHA3-512": true, "SHA224": true, "SHA256": true, "SHA384": true, "SHA512": true}

// ClassifyHash is "weak", "strong" or "" (unknown).
func ClassifyHash(alg string) string {
	u := strings.ToUpper(strings.TrimSpace(alg))
	switch {
	case weakHash[u]:
		return "weak"
	case strongHash[u]:
		return "strong"
	}
	return ""
}

// ClassifyCipher is "weak", "strong" or "" for a transformation string.
func ClassifyCipher(alg string) (string, string) {
	parts := strings.Split(strings.ToUpper(strings.TrimSpace(alg)), "/")
	name := parts[0]
	mode, pad := "", ""
	if len(parts) > 1 {
		mode = parts[1]
	}
	if len(parts) > 2 {
		pad = parts[2]
	}
	switch name {
	case "DES", "DESEDE", "TRIPLEDES", "3DES", "RC2", "RC4", "ARCFOUR", "BLOWFISH", "RC5", "IDEA":
		return "weak", name + " is a broken or legacy cipher"
	case "AES", "AES_128", "AES_256", "CHACHA20", "CHACHA20-POLY1305":
		if name == "AES" && (mode == "" || mode == "ECB") {
			return "weak", "AES in ECB mode leaks plaintext patterns"
		}
		return "strong", name + "/" + mode + " is a current authenticated or standard mode"
	case "RSA":
		if strings.Contains(pad, "OAEP") {
			return "strong", "RSA with OAEP padding"
		}
		return "weak", "RSA without OAEP padding"
	}
	return "", ""
}

func judgeAlgorithm(a *Analysis, in *Interp, cat string) {
	var o *Obj
	if r := in.Sink.Result; r != nil && r.O != nil && r.O.Alg != nil {
		o = r.O
	} else if r := in.Sink.Recv; r != nil && r.O != nil && r.O.Alg != nil {
		o = r.O
	}
	if o == nil {
		a.Verdict = NeedsReview
		a.Reason = "the algorithm used at the sink could not be resolved"
		a.Unknowns = append(a.Unknowns, "which algorithm the "+cat+" object at the sink uses")
		return
	}
	steps := []Step{o.AlgStep}
	for _, d := range in.Decisions {
		if strings.Contains(d.What, "properties") || strings.Contains(d.What, " sets ") || strings.Contains(d.What, "default applies") || strings.Contains(d.What, "returns the constant") {
			steps = append(steps, d)
		}
	}
	if a.Sink.Line != o.AlgStep.Line || a.Sink.File != o.AlgStep.File {
		steps = append(steps, a.Sink)
	}
	if !o.Alg.isStrConst() {
		a.Verdict = NeedsReview
		a.Reason = "the algorithm name is not a constant the analysis could resolve"
		a.claim("algorithm", "the algorithm is "+o.Alg.String(), "tentative", steps...)
		a.Unknowns = append(a.Unknowns, "the value of the algorithm name passed to "+o.Class+".getInstance")
		return
	}
	alg := o.Alg.S
	var class, why string
	if cat == "hash" {
		class = ClassifyHash(alg)
		why = alg + " is a " + class + " hash"
	} else {
		class, why = ClassifyCipher(alg)
	}
	switch class {
	case "weak":
		a.Verdict = TruePositive
		a.Reason = "the algorithm is " + alg + ": " + why
		a.claim("algorithm", "the algorithm resolves to "+alg+" ("+why+")", "supported", steps...)
	case "strong":
		a.Verdict = FalsePositive
		a.Reason = "the algorithm is " + alg + ": " + why
		a.claim("algorithm", "the algorithm resolves to "+alg+" ("+why+")", "supported", steps...)
	default:
		a.Verdict = NeedsReview
		a.Reason = "the algorithm " + alg + " is not in the checklist"
		a.Unknowns = append(a.Unknowns, "whether "+alg+" is weak")
	}
}

func judgeCookie(a *Analysis, in *Interp, f *File, sink *sitter.Node, cat string) {
	setter := "setSecure"
	if cat == "httponly" {
		setter = "setHttpOnly"
	}
	var flag *Val
	name := callName(f, sink)
	switch name {
	case setter:
		flag = arg(in.Sink.Args, 0)
	default:
		c := arg(in.Sink.Args, 0)
		if c.O == nil || c.O.Class != "Cookie" {
			a.Verdict = NeedsReview
			a.Reason = "the cookie added at the sink could not be resolved"
			a.Unknowns = append(a.Unknowns, "which cookie object reaches "+name)
			return
		}
		flag = c.O.Fields[setter]
		if flag == nil {
			a.Verdict = TruePositive
			a.Reason = "the cookie is added without " + setter + "(true) (the flag defaults to false)"
			a.claim("flag", a.Reason, "supported", a.Sink)
			return
		}
	}
	var steps []Step
	for _, d := range in.Decisions {
		if strings.Contains(d.What, setter) {
			steps = append(steps, d)
		}
	}
	steps = append(steps, a.Sink)
	switch {
	case flag.K == KBool && flag.Con && flag.B:
		a.Verdict = FalsePositive
		a.Reason = "the cookie is marked with " + setter + "(true)"
	case flag.K == KBool && flag.Con && !flag.B:
		a.Verdict = TruePositive
		a.Reason = "the cookie is marked with " + setter + "(false)"
	default:
		a.Verdict = NeedsReview
		a.Reason = "the value passed to " + setter + " is not a constant"
		a.Unknowns = append(a.Unknowns, "the value of the "+setter+" flag")
		return
	}
	a.claim("flag", a.Reason, "supported", steps...)
}

var sameSiteRe = regexp.MustCompile(`(?is)(setHeader|addHeader)\s*\(\s*"Set-Cookie"[^;]*SameSite`)

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
