package analysis

import (
	"regexp"
	"strconv"
	"strings"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// The cause-to-effect table of the diagnosis method. A candidate's category
// comes from its mechanism, read from the evidence through these rows, the
// same way for every failure mode:
//
//   - effect rows (families): what the failing entity's own error lines,
//     events and pod states say (a capacity limit, bad input, a missing
//     setting, a node fault, an exception in its code), first matching row
//     wins, most specific first;
//   - topology rows (inferCategory): signals confined to one node are
//     infrastructure; errors naming a downstream with transport failures
//     are that dependency's; a limit another system enforces (its 429,
//     its quota) while demand is flat is the dependency's, not ours;
//   - change rows (changeVote): the kind of the nearest change before the
//     onset (a release, a configuration edit, an infrastructure change, new
//     data) votes for its category, a change after the onset for nothing.
//
// Adding a failure mode is adding a row here (or a signal extractor that
// feeds the evidence), never a new verdict path: the candidate, its
// scoring, the report and the critic's checks stay the same.

// family is one effect row: the category its mechanism belongs to, the
// evidence text that shows it, and the reason given in the report.
type family struct {
	cat investigationv1.RootCauseCategory
	re  *regexp.Regexp
	why string
}

var families = []family{
	// Unambiguous capacity signatures first: "forbidden: exceeded quota"
	// is a quota, not a permission problem.
	{catResource, regexp.MustCompile(`(?i)(exceeded quota|quota exceeded|space exceeded|insufficient (cpu|memory|pods|ephemeral|nvidia|gpu)|oomkilled|oom[ -]?kill|out of (?:shared )?memory|outofmemoryerror|no space left|enospc|disk (is )?full|evicted|evictionthresholdmet|the node was low on resource|has \[?\d+\]?\s*/\s*\[?\d+\]? maximum|fork\(\) failed|cannot fork|disk (?:usage|watermark)[^\n]{0,40}exceeded|flood[- ]stage|read-only-allow-delete|can't fork|unable to create (?:new )?native thread|pthread_create failed|\bpids\.max\b|max(?:imum)? (?:number of )?[a-z_ ]{0,24}(?:reached|exceeded)|would exceed (?:the )?(?:maximum|limit)|(?:to avoid|imminent) (?:transaction id )?wraparound|wraparound data loss|\bexceeds (?:the |its )?[\w-]+ limit\b|\bthread exhaustion\b|\bdata too large\b|\blarger than the limit\b)`), "a capacity limit (quota, memory, CPU, disk) is exhausted"},
	// The machine's own hardware reports a fault (a sensor over its
	// threshold, a fan stopped, a power supply lost): whatever it then
	// throttles or slows is the hardware's effect, not a capacity the
	// workload ran out of.
	{catInfra, regexp.MustCompile(`(?i)(\btemperature (?:is )?above (?:the )?(?:threshold|critical|limit)|\bover-?temperature\b|\boverheat(?:ing|ed)?\b|\bthermal (?:event|trip|shutdown|throttl\w*)|\bfan\b[^\n]{0,30}\b(?:failure|failed|fault|stopped|not spinning|0 rpm)|\b(?:power supply|psu)\b[^\n]{0,30}\b(?:failure|failed|fault|lost)\b)`), "the machine's hardware reports a fault (a temperature over its threshold, a fan or a power supply failed)"},
	// A configured value the client cannot put in a request header (a
	// trailing newline, a control character): the value's setting, not
	// the input data, whatever the character complaint says.
	{catConfig, regexp.MustCompile(`(?i)(invalid header (?:field )?value|invalid character in header|illegal character\(s\) in message header)`), "a configured value (a key, a token) cannot be sent in a request header"},
	// A TLS handshake that fails on the protocol version or the ciphers
	// the two sides offer: one side's pinned or retired setting, not an
	// outage (either side's configuration; the caller's when it still
	// offers what the other retired).
	{catConfig, regexp.MustCompile(`(?i)(\bprotocol_version\b|\bunsupported (?:ssl |tls )?protocol\b|\bno (?:appropriate |supported )?protocols? (?:available|in common)\b|\bwrong version number\b|\balert protocol version\b|\bno (?:shared |common )?cipher(?:s| suites?)? (?:in common|available)\b|\bno_shared_cipher\b|\binappropriate_fallback\b)`), "the two sides of a TLS connection share no protocol version or cipher"},
	// A server-side prepared statement that the next query does not find
	// (or finds twice) on its connection: a transaction-mode pooler
	// (PgBouncer, Odyssey, RDS Proxy) hands each transaction another
	// server connection, so the client's statement cache must be off or
	// the pool mode session. PgBouncer documents it; the setting, not the
	// code or the data, is wrong.
	{catConfig, regexp.MustCompile(`(?i)prepared statement "?[\w$-]*"? (?:does not exist|already exists)`), "server-side prepared statements through a transaction-pooling connection pooler: each transaction may get another server connection"},
	// A dependency that answers its API's calls with an HTML page (its
	// maintenance or error page, a proxy's) fails, whatever parse error
	// the caller then reports: the answer, not the caller's data, is bad.
	{catDependency, regexp.MustCompile(`(?i)(content-type[=: ]+"?text/html|unexpected (character|token) \(?'?<|<!doctype html|<html[ >])`), "the dependency answers with an HTML page (a maintenance or error page) instead of its API's data"},
	{catData, regexp.MustCompile(`(?i)(` + invalidValue + `|pars(e|ing) (error|failed|exception)|incorrect string value|limit of total fields|failed to (parse|decode|unmarshal|deserializ)|cannot (parse|decode|unmarshal)|(?:could|can) ?not be (?:parsed|decoded)|unpars(?:e)?able|unmarshal|json: cannot|unexpected (token|character|end of (json|input)|eof while parsing)|malformed|invalid (json|xml|csv|format|input|record|row|payload|date|timestamp|encoding|utf-?8|byte sequence|character)|validation (error|failed)|failed validation|schema (mismatch|violation|validation)|does not match (the )?schema|constraint violat|violates .{0,40}constraint|null value in column|duplicate key|checksum mismatch|corrupt|bad record|deserializ|magic byte|poison (pill|record|message)|numberformatexception|invalid literal for|could not convert|type mismatch|missing (required )?field|\b(year|month|day|hour|minute|second)s?( -?\d+)? (is |value )?out of range|(?:timestamp|date|time) (?:is |lies )?in the future|\binput\b[^\n]{0,40}\bis invalid\b|no enum constant|unknown enum (?:value|constant)|not a valid enum|\bunknown [a-z_ -]{1,30} ['"][^'"\n]{1,40}['"][^\n]{0,80}\bexpected\b|\b(?:must|should) (?:be|not be) (?:positive|negative|non-negative|non-zero|nonzero|greater than|less than|at least|at most|between|empty|null|blank)\b[^\n]{0,40}=)`), "input data the service cannot parse or validate"},
	{catConfig, regexp.MustCompile(`(?i)((missing|required|unset|undefined|empty) (config|configuration|env(ironment)? var(iable)?|variable|key|setting|property|option|secret|parameter|flag)|env(ironment)? var(iable)? .{0,40}(not set|missing|required|empty)|is not set|not configured|no such file or directory|file not found|config(uration)? (error|invalid|not found)|invalid (value|configuration|config|setting|option|argument|port|url|endpoint|selector)|unknown (flag|option|field|property|key|parameter)|flag provided but not defined|permission denied|forbidden|\b403\b|access denied|unauthori[sz]ed|\b401\b|not authorized|configmap .{0,40}not found|secret .{0,40}not found|(configmap|secret)s? "?[a-z0-9.-]+"? not found|createcontainerconfigerror|selector (does not match|mismatch)|port mismatch|wrong port|address already in use|bind: |feature flag|misconfigur|x509|certificate (?:for \S+ )?(?:has )?expired|certificate verify failed|password authentication failed|authentication failed|wrongpass|noauth|access denied for user|access_refused|sasl authentication failed|authentication required|(?:wrong|invalid|incorrect|bad) (?:user ?name|username|password|passphrase|credentials?|api[ _-]?key|access key|secret key)|invalid credentials|bad credentials|(jwt|token|signature) verification failed|jwks|no matching (signing )?key|(?:key|account|user|api|service|project|credential|token)s? (?:\S+ ){0,3}(?:is|was|has been) (?:disabled|revoked|deactivated)|disabledexception|keydisabled|failed to pull image|errimagepull|imagepullbackoff|manifest unknown|repository does not exist|no such host|nxdomain|could not resolve host|cannot evict pod as it would violate|would violate the pod'?s disruption budget|\b(?:set|increase|decrease|raise|lower)\b[^\n]{0,30}\.?\bspec\.[a-z]\w*)`), "a setting, key, file or permission the service needs is wrong or missing"},
	capacityFamily,
	// A request refused for its size by a limit the proxy or server is
	// configured with (ingress-nginx's proxy-body-size, nginx's
	// client_max_body_size): the setting, not the client's data.
	{catConfig, regexp.MustCompile(`(?i)(client intended to send too large body|request entity too large|\bpayload too large\b|\b413\b[^\n]{0,40}\b(?:too large|body)|client_max_body_size|proxy-body-size)`), "a request body is larger than the proxy or server is configured to accept"},
	{catInfra, regexp.MustCompile(`(?i)(kernel|i/o error|input/output error|read-only file ?system|disk (failure|error)|bad sector|nvme|\bebs\b|volume .{0,20}(degraded|impaired)|network ?unavailable|\bnic\b|link (is )?down|packet loss|conntrack|nodenotready|node .{0,30}not ?ready|kubelet (stopped|is not|not) |rebooted|system oom|hardware|instance (retirement|status check)|zone (outage|unavailable)|clock skew|\bntp\b|failover|failed over|multi-az|host replacement|reboot|slow fdatasync|\bfsync\b[^\n]{0,30}\b(?:slow|took)\b|wal (?:fsync|sync) (?:duration|took)|unreadable (?:\(pending\) )?sectors?|pending sectors?|reallocated sectors?|medium error|hostbyte=did_\w+|\bsmartd?\b[^\n]{0,60}\b(?:fail\w*|error|pending|prefail)\b)`), "a node, disk or network level fault"},
	// A server error answered to a call (the response's status, as the
	// client reports it) is the called service's failure, whatever
	// exception class the client wraps it in.
	{catDependency, regexp.MustCompile(`(?i)(https? response error[^\n]{0,40}\b5\d\d\b|response (?:status|code)[ =:]+5\d\d\b|\bstatus ?code[ =:]+5\d\d\b|\bsoap(?:env)?:server\b|(?:returned|responded with|received) (?:an? )?(?:http )?5\d\d\b|\bfailed(?::| with)? (?:an? )?(?:status |http |code )?5\d\d\b)`), "the called service answers with server errors"},
	// A called API that answers 410 Gone, or says the version called was
	// retired, removed what the caller uses: the provider's change.
	{catDependency, regexp.MustCompile(`(?i)(\b410 gone\b|\bapi[_ -]?version[_ -]?(?:retired|removed|sunset)\b|\b(?:version|endpoint|api) [\w./-]{0,20}\s?(?:was|has been|is) (?:retired|sunset|decommissioned)\b)`), "the called API removed the version or endpoint the caller uses"},
	{catCode, regexp.MustCompile(`(?i)(?:` + strings.TrimPrefix(exceptionRe.String(), "(?i)") + `|exception|stack ?trace|\bat [a-z0-9_.$]+\([a-z0-9_]+\.(java|kt|scala):\d+\)|\.go:\d+|\.py", line \d+|goroutine \d+|unreachable code|not implemented|\bdeadlock(?:ed)?\b)`), "runtime exceptions in the service's own code"},
}

// weekYearFamily: a date written one year off in the last days of
// December, next to the same day in the right year: the code formatted it
// with the week-based year (Java's and ICU's "YYYY", strftime's "%G"),
// which is next year's from the last Monday-started week of December.
var weekYearFamily = family{cat: catCode, why: "a date is written with the week-based year (YYYY, not yyyy): the last days of December get next year's number"}

// weekYearShift: text quotes two dates of the same day and month, between
// 26 December and 31 December, whose years differ by one
// ("departure 2027-12-28 ... requested 2026-12-28").
func weekYearShift(text string) bool {
	ds := reISODate.FindAllStringSubmatch(text, 8)
	for i := range ds {
		for j := i + 1; j < len(ds); j++ {
			a, b := ds[i], ds[j]
			if a[2] != "12" || b[2] != "12" || a[3] != b[3] || a[3] < "26" {
				continue
			}
			ya, _ := strconv.Atoi(a[1])
			yb, _ := strconv.Atoi(b[1])
			if ya-yb == 1 || yb-ya == 1 {
				return true
			}
		}
	}
	return false
}

// reSnakeException: an error type in snake case ending in _exception.
var reSnakeException = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)*_exception\b`)

// reCamelIdent: an identifier of three or more capitalised words run
// together (an exception class, an error code, a constant).
var reCamelIdent = regexp.MustCompile(`\b[A-Z][a-z]+(?:[A-Z][a-z]+){2,}\b`)

// reCamelHump: one word of such an identifier.
var reCamelHump = regexp.MustCompile(`[A-Z][a-z]+`)

// camelWords is the text's run-together identifiers written as words
// ("SequenceGeneratorLimitExceeded" -> "sequence generator limit
// exceeded"), or "" when it has none.
func camelWords(text string) string {
	var out []string
	for _, id := range reCamelIdent.FindAllString(text, 8) {
		out = append(out, strings.ToLower(strings.Join(reCamelHump.FindAllString(id, -1), " ")))
	}
	return strings.Join(out, "; ")
}

// reCrashHeader: the first line of a runtime's crash report. What follows
// it is the value the program panicked with ("invalid argument to Int63n"),
// the program's own failure, whatever words it uses.
var reCrashHeader = regexp.MustCompile(`(?i)^\W{0,3}(?:\S+\s+){0,4}?(panic:|fatal error:|traceback \(most recent call last\)|exception in thread|unhandled exception|terminate called after throwing|uncaught (?:exception|error))`)

// reRetriesExhausted: a client's retries used up ("retries exhausted",
// "exhausted 3 retry attempts").
var reRetriesExhausted = regexp.MustCompile(`(?i)\b(?:retries|retry attempts|attempts|retry budget)\s+(?:were\s+|are\s+)?exhausted\b|\bexhausted\s+(?:all\s+)?(?:\d+\s+)?(?:retries|retry attempts|attempts)\b`)

// reCallerField: a structured log line's caller field (zap's "caller",
// logrus' and slog's "caller=" / "source=").
var reCallerField = regexp.MustCompile(`(?i)"?\b(?:caller|source)"?\s*[:=]\s*"?[\w./@-]+\.(?:go|py|java|kt|rb|js|ts|rs|cs):\d+"?`)

// familyOf is the effect row text matches: the first row in order, except
// that a crash header is the code row's unless a capacity signature (an
// out-of-memory) is in it.
func familyOf(text string) (family, bool) {
	// A client that gave up retrying ("retries exhausted 3/3") ran out of
	// patience, not of a capacity: the words around it decide the row.
	text = reRetriesExhausted.ReplaceAllString(text, "")
	// A structured logger records the file and line of every call
	// ("caller":"etcdserver/util.go:170"): where the line was written, not
	// a stack frame of a failure.
	text = reCallerField.ReplaceAllString(text, "")
	// An error class or code written as one identifier
	// ("SequenceGeneratorLimitExceeded", "QuotaExceededError") says its
	// mechanism in words run together: read them apart too.
	if w := camelWords(text); w != "" {
		text += " (" + w + ")"
	}
	if weekYearShift(text) {
		return weekYearFamily, true
	}
	// A server's error type written in snake case
	// ("index_not_found_exception", "validation_exception") is the name of
	// an answer the server gave, not an exception thrown in the caller's
	// code: it is read by its words.
	text = reSnakeException.ReplaceAllStringFunc(text, func(m string) string {
		return strings.ReplaceAll(strings.TrimSuffix(m, "_exception"), "_", " ")
	})
	if reCrashHeader.MatchString(text) && !families[0].re.MatchString(text) {
		return families[len(families)-1], true
	}
	for _, f := range families {
		if f.re.MatchString(text) {
			return f, true
		}
	}
	return family{}, false
}

// changeVote is what a change preceding the onset says about the
// category: the cause side of the table.
func changeVote(kind string) (investigationv1.RootCauseCategory, string, bool) {
	switch kind {
	case changeConfig, changeCapacity:
		return catConfig, "a configuration change (setting, flag, policy, limit) shortly before the onset", true
	case changeInfra:
		return catInfra, "an infrastructure change (node, OS, network, zone) shortly before the onset", true
	case changeData:
		return catData, "new input data loaded shortly before the onset", true
	}
	return catUnknown, "", false
}

// invalidValue: a value a service checked and found impossible (not a
// number, not finite, a number outside the range its kind allows): the
// words of a validation, whatever the field. The data row reads it, and a
// warning that says so is the symptom of bad data (reInvalidValue).
const invalidValue = `=\s*nan\b|\bis nan\b|\bnan (?:score|value|result)s?\b|\bnot finite\b|\bnon-finite\b|-?\d[\d.]*\s+(?:is\s+)?out of (?:the )?(?:valid |allowed )?range\s*[\[(]\s*-?\d[\d.]*\s*[,;]|-?\d[\d.]*[,;]?\s*\(?\s*expected\s*(?:<=?|>=?|≤|≥)\s*-?\d`

// capacityFamily is the effect row of a capacity limit hit inside the
// service (queue, pool, workers, memory, CPU, rate); saturation needs it.
var capacityFamily = family{catResource, regexp.MustCompile(`(?i)(queue (is )?(full|overflow|depth)|backlog|too many (open files|requests|connections|threads|processes|clients|sessions)|too many [a-z_]+(?: [a-z_]+)?\b[^\n]{0,160}\blimit\b|no more (connections|clients|sessions|workers|threads|slots)|connection slots|connection limit|max_?(client_?)?(conn|connections|clients|sessions|threads|workers)\b|exhausted|pool (timeout|limit|is full)|no (free|available|idle) (worker|thread|connection|slot)s?|rejectedexecution|rejected execution|thread pool|worker pool|out of memory|outofmemory|\boom\b|heap (space|exhausted)|gc overhead|memory limit|throttl|rate limit|\b429\b|capacity (exceeded|reached)|saturat|limit (exceeded|reached)|reached (?:the |its |a )?max(?:imum)?\b|resource exhausted|resource_exhausted|emfile|enomem|cannot allocate|(?:failed to|unable to|could not) allocate|(?:failed to|unable to|could not) assign (?:an? )?(?:ip|address)|insufficient ?(?:free|cpu|memory|capacity|resources?|storage|addresses)|not enough free|cannot assign requested address|eaddrnotavail|ephemeral ports?|load shedding|shed load|overloaded|at capacity|slow consumer|lag (growing|increasing))`), "a capacity limit (queue, pool, workers, memory, CPU, rate) is exhausted"}
