package analysis

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// A capacity failure at an autoscaler's maximum that a commit weeks
// earlier lowered: the commit is the cause, a configuration error. A
// commit that names only the service, a change after the alert, or a
// failure that is not about capacity promotes nothing.
func TestLimitChangeFinding(t *testing.T) {
	alertAt := time.Date(2026, 12, 10, 12, 30, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { x := alertAt.Add(-d); return &x }
	build := func(commits ...facts.Commit) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "ApiLatencyHigh", Namespace: "orders", Service: "pickup-api", StartsAt: timestamppb.New(alertAt)}, nil)
		ev.Deployments = []Deployment{{Deployment: facts.Deployment{Name: "pickup-api", Namespace: "orders", Replicas: 8, ReadyReplicas: 8,
			Autoscalers: []facts.Resource{{Kind: "HorizontalPodAutoscaler", Namespace: "orders", Name: "pickup-api",
				Signals: []string{"replicas current 8, desired 8, minReplicas 2, maxReplicas 8", "at its maxReplicas bound (8): ScalingLimited (TooManyReplicas): the desired replica count is more than the maximum replica count"}}}}}}
		for _, c := range commits {
			ev.Commits = append(ev.Commits, Commit{Commit: c})
		}
		return ev
	}
	lead := Finding{Mode: ModeTrafficSaturation, Category: catResource, Score: 0.77, Entity: "deployment/orders/pickup-api", Statement: "pickup-api is saturated by traffic"}
	lowered := facts.Commit{SHA: "77aa01bb02", Service: "platform-config", Message: "cost: cap HPA maxReplicas to last month's p95", Timestamp: ago(20 * 24 * time.Hour),
		Files: []facts.CommitFile{{Path: "apps/orders/pickup-api/hpa.yaml", ChangeType: facts.ChangeConfig}}, ChangeTypes: []string{facts.ChangeConfig}}

	f, ok := build(lowered).limitChangeFinding(lead, alertAt)
	if !ok {
		t.Fatal("no finding for the commit that lowered the bound the workload is at")
	}
	if f.Category != catConfig || f.Entity != "commit/77aa01b" || f.Score <= lead.Score {
		t.Errorf("finding %s %s %.2f, want configuration error on the commit, above the lead", f.Category, f.Entity, f.Score)
	}
	if !strings.Contains(f.Statement, "maxReplicas") || !strings.Contains(f.Statement, "77aa01b") {
		t.Errorf("statement %q must name the setting and the commit", f.Statement)
	}
	if _, ok := f.Explains[lead.Mode]; !ok {
		t.Errorf("the finding must explain the capacity lead (%s)", lead.Mode)
	}

	onlyName := lowered
	onlyName.Message = "pickup-api: bump chart version"
	after := lowered
	after.Timestamp = ago(-time.Hour)
	code := lowered
	code.Files, code.ChangeTypes = []facts.CommitFile{{Path: "internal/scaler.go", ChangeType: facts.ChangeFeature}}, []string{facts.ChangeFeature}
	for name, c := range map[string]facts.Commit{"names only the service": onlyName, "after the alert": after, "a code change": code} {
		if f, ok := build(c).limitChangeFinding(lead, alertAt); ok {
			t.Errorf("%s: promoted to %s", name, f.Entity)
		}
	}
	notCapacity := lead
	notCapacity.Category = catCode
	if _, ok := build(lowered).limitChangeFinding(notCapacity, alertAt); ok {
		t.Error("a code defect lead was promoted to a bound change")
	}
	// A lead that is a holder other than the alert's target, and a change
	// that made that holder (it names it): the change added demand and set
	// no bound; the holder's reading stands. The same change naming
	// another object still sets the bound.
	holder := lead
	holder.Entity = "cronjob/platform/replica-audit"
	made := lowered
	made.Message = "add replica-audit CronJob (scales every HPA to maxReplicas hourly)"
	if f, ok := build(made).limitChangeFinding(holder, alertAt); ok {
		t.Errorf("the change that made the holder was promoted to a bound change: %s", f.Entity)
	}
	if _, ok := build(lowered).limitChangeFinding(holder, alertAt); !ok {
		t.Error("a change that set the bound, with a holder lead, was not promoted")
	}
	// A lead that is the bound itself (a quota), named by the change that
	// set it: the change set the bound.
	quota := lead
	quota.Entity = "resourcequota/platform/replica-audit"
	if _, ok := build(made).limitChangeFinding(quota, alertAt); !ok {
		t.Error("a change naming the quota the lead is was not promoted")
	}
}

// A configuration commit of the failing service minutes before the first
// error is the cause of what failed next; the same commit after the first
// error, or an hour before it, or another service's, is not.
func TestNearConfigChangeFinding(t *testing.T) {
	alertAt := time.Date(2026, 10, 30, 8, 45, 0, 0, time.UTC)
	at := func(m int) *time.Time { x := time.Date(2026, 10, 30, 8, m, 0, 0, time.UTC); return &x }
	build := func(c facts.Commit) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "PostingErrors", Namespace: "ledger", Service: "posting", StartsAt: timestamppb.New(alertAt)}, nil)
		ev.Logs = []LogLine{{LogLine: facts.LogLine{Timestamp: at(37), Service: "gateway", Level: "ERROR", Message: "POST /v1/postings 503 upstream overflow"}}}
		ev.Commits = []Commit{{Commit: c}}
		return ev
	}
	lead := Finding{Mode: ModeTrafficSaturation, Category: catResource, Score: 0.67, Entity: "deployment/ledger/posting", Statement: "posting is saturated"}
	cfg := facts.Commit{SHA: "91c3e5a7b9", Service: "posting", Message: "mesh: standard pool profile", Timestamp: at(34),
		ChangeTypes: []string{facts.ChangeConfig}, Files: []facts.CommitFile{{Path: "mesh/ledger/posting-destinationrule.yaml", ChangeType: facts.ChangeConfig}}}
	f, ok := build(cfg).nearConfigChangeFinding(lead)
	if !ok || f.Category != catConfig || f.Entity != "commit/91c3e5a" {
		t.Fatalf("finding %+v, %v; want a configuration error on the commit", f.Entity, ok)
	}
	if !strings.Contains(f.Statement, "3 min before the onset") {
		t.Errorf("statement %q must say how long before the onset", f.Statement)
	}
	late, early, other := cfg, cfg, cfg
	late.Timestamp, early.Timestamp = at(39), at(0)
	other.Service, other.Files = "billing", []facts.CommitFile{{Path: "mesh/ledger/billing-destinationrule.yaml"}}
	for name, c := range map[string]facts.Commit{"after the first error": late, "long before": early, "another service's": other} {
		if f, ok := build(c).nearConfigChangeFinding(lead); ok {
			t.Errorf("%s: promoted to %s", name, f.Entity)
		}
	}
}

// Specific words tie a change to a failure; object names, common words
// and the analysis's own vocabulary do not.
func TestSharedTerms(t *testing.T) {
	failure := []string{"envoy_cluster_upstream_rq_pending_overflow rose from 0 to 239635", "Volume data-route-pg-0 is full"}
	tests := []struct {
		change string
		want   string
	}{
		{"http1MaxPendingRequests 1024 -> 16", "pending"},
		{"ConfigMap route-pg-config edited", ""},       // a word of an object's name
		{"raised the limit of errors from 0 to 5", ""}, // the report's own words
		{"conntrack.maxPerCore lowered to 4096", ""},   // nothing in common
	}
	for _, tc := range tests {
		if got := strings.Join(sharedTerms(tc.change, failure, map[string]bool{}), ","); got != tc.want {
			t.Errorf("sharedTerms(%q) = %q, want %q", tc.change, got, tc.want)
		}
	}
	if got := sharedTerms("pending requests lowered", failure, map[string]bool{"pending": true}); len(got) != 0 {
		t.Errorf("a word common in the evidence counted: %v", got)
	}
}

// A crash header is the program's own failure whatever its value says; an
// out-of-memory stays a capacity failure.
func TestFamilyOfCrashHeader(t *testing.T) {
	tests := []struct {
		text string
		want investigationv1.RootCauseCategory
	}{
		{"panic: invalid argument to Int63n", catCode},
		{"goroutine 1 [running]: panic: invalid configuration", catCode},
		{"fatal error: runtime: out of memory", catResource},
		{"invalid argument: replicas must be positive", catConfig},
		{"Exception in thread \"main\" java.lang.IllegalStateException: bad state", catCode},
		// A date or time value out of range is the input's, not the code's.
		{"ValueError: day is out of range for month: birth_date='1987-02-31'", catData},
		{"ValueError: year 59453 is out of range", catData},
		{"runtime error: index out of range [3] with length 3", catCode},
		// A token the service cannot verify against its keys is a key or
		// credential setting.
		{"Jwt verification failed: Jwks doesn't have key to match kid or alg from Jwt", catConfig},
		// A credential the server refuses, in the words of several servers
		// and drivers, is a credential setting, not the pool that dialled.
		{"redis: connection pool: failed to dial after 5 attempts: WRONGPASS invalid username-password pair or user is disabled.", catConfig},
		{"NOAUTH Authentication required.", catConfig},
		// An eviction the disruption budget refuses: the budget is a
		// setting (the eviction API's own words, and a drain tool's).
		{`error when evicting pods/"ledger-7f9c" -n "payments" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.`, catConfig},
		{"SQLSTATE[HY000] [1045] Access denied for user 'app'@'10.0.3.7' (using password: YES)", catConfig},
		{"amqp: ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN", catConfig},
		{"upload failed: invalid access key for bucket exports", catConfig},
		// No source port left to connect from is a capacity limit; an
		// address a server cannot bind is a setting.
		{`dial tcp 10.12.0.44:0->52.66.14.201:443: connect: cannot assign requested address`, catResource},
		{"listen tcp 10.9.9.9:8080: bind: cannot assign requested address", catConfig},
		// An allocation refused for want of free capacity (addresses of a
		// subnet, a node's CPU or memory), in a CNI's, a cloud API's and
		// the scheduler's words, is a capacity limit.
		{"ipamd: Failed to increase pool size: failed to allocate a private IP address: InsufficientFreeAddressesInSubnet", catResource},
		{`plugin type="calico" failed (add): failed to assign an IP address to container`, catResource},
		{"0/6 nodes are available: 6 Insufficient memory.", catResource},
		{"reserve failed: not enough free space on volume /data", catResource},
		{`etcdserver: mvcc: database space exceeded`, catResource},
		{"ERROR insert batch failed: out of shared memory (SQLSTATE 53200)", catResource},
		// A count at its maximum, in the words of several servers.
		{"create index failed: [validation_exception] Validation Failed: 1: this action would add [4] total shards, but this cluster currently has [1000]/[1000] maximum shards open;", catResource},
		{"ERR max number of clients reached", catResource},
		{"topic creation failed: this request would exceed the limit of partitions per broker", catResource},
		// "Too many" of anything, told against a limit, is a capacity limit
		// whatever it counts.
		{"DB::Exception: Too many parts (3001). Merges are processing significantly slower than inserts; the limit is set by parts_to_throw_insert", catResource},
		{"too many pending acks (5000): consumer limit reached", catResource},
		// A value checked and found impossible is the data's.
		{`WARN scored booking=BK-1 model=v9 score=NaN decision=review reason="score not finite"`, catData},
		{"WARN pickup P-1 donor=D-2: latitude 151.2 out of range [-90,90]; pickup skipped", catData},
		// A key, account or API someone turned off is a setting, whatever
		// exception type carries it.
		{`api error KMS.DisabledException: arn:aws:kms:us-east-2:1111:key/ab-12 is disabled.`, catConfig},
		{`googleapi: Error 403: Cloud Translation API has not been used in project 4242 before or it is disabled`, catConfig},
		{`com.azure.security.keyvault.keys: Operation decrypt is not allowed on a disabled key (KeyDisabled)`, catConfig},
		{`login failed: account svc-report is disabled`, catConfig},
		// A configured value the client cannot put in a request header (a
		// trailing newline, a control character) is that value's setting.
		{`Post "https://api.carrier.example/v1": net/http: invalid header field value for "Authorization"`, catConfig},
		{`TypeError [ERR_INVALID_CHAR]: Invalid character in header content ["x-api-key"]`, catConfig},
		{`java.lang.IllegalArgumentException: Illegal character(s) in message header value: Bearer abc`, catConfig},
		// A dependency answering with an HTML page (maintenance, a proxy's
		// error) fails, whatever the caller's parser says; JSON that does
		// not parse is the data's.
		{`lookup failed partner=api.fleet.example status=200 content-type=text/html: JsonParseException: Unexpected character ('<' (code 60))`, catDependency},
		{`SyntaxError: Unexpected token < in JSON at position 0`, catDependency},
		{`decode quote: invalid character '<' looking for beginning of value; body: <!DOCTYPE html><title>503</title>`, catDependency},
		{`json: cannot unmarshal string into Go struct field Quote.price of type float64`, catData},
		// A client that gave up retrying ran out of patience, not of a
		// capacity; a server error answered to its call is the called
		// service's, whatever exception class wraps it.
		{"decrypt failed: operation error KMS: Decrypt, https response error StatusCode: 500, KMSInternalException: An internal error occurred (retries exhausted 3/3)", catDependency},
		{"geocode lookup failed: upstream returned 503 after 2 attempts", catDependency},
		{"send failed: retries exhausted, connection pool exhausted", catResource},
		// No process or thread left to start is a capacity limit (the
		// cgroup's pids, the user's threads), whatever exception carries it.
		{"ERROR render: OSError: [Errno 11] Resource temporarily unavailable: fork() failed spawning thumbnailer", catResource},
		{"java.lang.OutOfMemoryError: unable to create new native thread", catResource},
		// A store that blocks writes at a disk watermark is full.
		{"bulk index failed: cluster_block_exception: index [s-2026.05] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block]", catResource},
		// A runtime that stops at its own bound of threads crashes on a
		// capacity limit, though its crash report says "fatal error".
		{"runtime: program exceeds 10000-thread limit; fatal error: thread exhaustion", catResource},
		// Identifiers a database hands out run out: it stops writes to
		// avoid wrapping around.
		{`ERROR:  database is not accepting commands to avoid wraparound data loss in database "ledger"`, catResource},
		{`WARNING:  oldest xmin is far in the past; imminent wraparound`, catResource},
		// A record dated in the future is bad input, whatever the feed.
		{"rejected 40 rows from feed tide-export: timestamp in the future (2026-03-30T11:00:00 without offset)", catData},
		{"skip reading sensor=ws-4: date is in the future", catData},
		// Input the service rejects as invalid is the data's, whatever
		// exception class carries it.
		{"shapely.errors.GEOSException: TopologyException: Input geom 1 is invalid: Self-intersection at 10.065 50.015", catData},
		// A controller that says which field of its object's spec to set
		// reports a setting, whatever else it suggests checking.
		{"too many missed start times: 101. Set or decrease .spec.startingDeadlineSeconds or check clock skew", catConfig},
		// A certificate that expired (renewal is a setting's job).
		{"SSL certificate for repairs.escapement.example expired (notAfter 2026-10-05T05:00:00Z)", catConfig},
		// A value outside the set the consumer knows is the data's.
		{"ERROR IllegalArgumentException: No enum constant Grade.LIVE_CRAB at offset 881204 partition 2; not committing, retrying", catData},
		{"decode order: proto: unknown enum value 7 for field status", catData},
		// A call that failed with the called service's server error.
		{"PutObject to s3://jammers-photos/2026/02/28 failed: 503 ServiceUnavailable: Service is unable to handle request (us-east-1)", catDependency},
		{"POST https://api.partner.example/v1/orders failed with status 502", catDependency},
		// A structured logger's caller field is not a stack frame: a slow
		// apply is no exception in the code.
		{`level=warn caller=raft/node.go:88 msg="leader changed" kernel: link is down`, catInfra},
		{`panic: runtime error: index out of range [3] with length 3 at main.go:42`, catCode},
		// A deadlock the runtime or the database reports is the code's.
		{"Found one Java-level deadlock:", catCode},
		{"ERROR: deadlock detected", catCode},
		// An error class that says its mechanism in run-together words,
		// and a sequence or counter at its maximum, are capacity limits.
		{"POST /jobs/J-1/events 500: PG::SequenceGeneratorLimitExceeded", catResource},
		{"insert failed: nextval: reached maximum value of sequence \"orders_id_seq\" (2147483647)", catResource},
		// A provider's server error in an SDK's words, and a value
		// outside the set the service expects, whatever the field.
		{"GetObject media-bucket: StatusCode: 503, RequestID: 0716D9, api error SlowDown: Please reduce your request rate.", catDependency},
		{"tax calculation failed: unknown country_code 'UK' for account A-1 (expected ISO 3166-1 alpha-2)", catData},
		{"rejecting order: unknown currency \"XBT\" in line 4, expected one of EUR, GBP", catData},
		{"payment intent for order W-1 rejected: amount must be positive (amount=0.00)", catData},
		// A SOAP fault whose code says the server failed.
		{"VAT check DE123 via tax.example/vies: soap:Server MS_UNAVAILABLE; order blocked", catDependency},
		{"invalid reading: temperature must be between -60 and 60 (got temperature=-9999)", catData},
		// A called API that removed what the caller uses.
		{"POST https://api.mt.example/v2/translate 410 Gone: {\"error\":\"x\"}", catDependency},
		{"geocode failed: {\"code\":\"api_version_retired\",\"detail\":\"use v4\"}", catDependency},
		{"sync aborted: endpoint /v1/stock was retired on 2027-01-01", catDependency},
		// A TLS handshake that fails on the protocol or ciphers offered.
		{"confirm charge ch_1: javax.net.ssl.SSLHandshakeException: Received fatal alert: protocol_version", catConfig},
		{"upstream SSL: error:0A00010B:SSL routines::wrong version number while connecting to upstream", catConfig},
		{"ssl.SSLError: [SSL: UNSUPPORTED_PROTOCOL] unsupported protocol (_ssl.c:1006)", catConfig},
		{"tls: no cipher suite supported by both client and server; NO_SHARED_CIPHER", catConfig},
		// A date one year off in the last days of December beside the
		// same day in the right year: the week-based year (YYYY).
		{"booking rejected: departure date 2027-12-28 outside booking horizon (365 days); requested departure 2026-12-28", catCode},
		{"invoice I-9 dated 2031-12-30 rejected as future (issued 2030-12-30)", catCode},
		// A body larger than the proxy's configured limit.
		{`client intended to send too large body: 3840556 bytes, client: 100.64.8.1, server: casks.example, request: "POST /v1/photos HTTP/2.0"`, catConfig},
		{"upload failed: 413 Request Entity Too Large (nginx)", catConfig},
		// A disk that syncs slowly or reports failing sectors.
		{`{"level":"warn","caller":"wal/wal.go:805","msg":"slow fdatasync","took":"1.2s","expected-duration":"1s"}`, catInfra},
		{"smartd: Device /dev/sdg, 2048 Currently unreadable (pending) sectors", catInfra},
		{"sd 0:0:6:0: [sdg] tag#93 FAILED Result: hostbyte=DID_SOFT_ERROR", catInfra},
		// A server's snake-case error type is read by its words, not as
		// an exception of the caller's code.
		{"search failed: circuit_breaking_exception: [parent] Data too large, data for [<http_request>] would be [8.1gb], which is larger than the limit of [7.9gb]", catResource},
		{"bulk failed: validation_exception: this action would add [2] shards, but this cluster currently has [1000]/[1000] maximum normal shards open", catResource},
		// Input the store cannot hold as given: a 4-byte character in a
		// 3-byte column, documents whose keys keep adding fields.
		{`purchase failed: Error 1366 (HY000): Incorrect string value: 'ð' for column 'note' at row 1`, catData},
		{`bulk item failed: illegal_argument_exception: Limit of total fields [1000] has been exceeded while adding new fields [12]`, catData},
	}
	for _, tc := range tests {
		f, ok := familyOf(tc.text)
		if !ok || f.cat != tc.want {
			t.Errorf("familyOf(%q) = %v (%v), want %v", tc.text, f.cat, ok, tc.want)
		}
	}
	for _, text := range []string{
		`{"level":"warn","ts":"2026-11-03T01:00:20Z","caller":"etcdserver/util.go:170","msg":"apply request took too long","took":"0.900s"}`,
		`time=2026-01-02T03:04:05Z level=WARN source=/app/sync/loop.go:88 msg="sync slower than its interval"`,
		// A server's error type names its answer, not the caller's code.
		`OpenSearch bulk request failed for 1110 messages: index_not_found_exception: no such index [opera-2026.05.01]`,
	} {
		if f, ok := familyOf(text); ok {
			t.Errorf("familyOf(%q) = %v: a caller field read as a failure", text, f.cat)
		}
	}
}

// A release that shipped only a values change lowering the memory limit,
// and containers OOMKilled at that limit hours later: the release (its one
// commit) set the bound, however long before. It is dated by its rollout,
// not by the commit, and the onset by the first Warning event of the
// target's pods. A code release, or a commit that names nothing of the
// bound, is not this row.
func TestLimitChangeOOMAtLoweredLimit(t *testing.T) {
	alertAt := time.Date(2027, 1, 12, 11, 40, 0, 0, time.UTC)
	at := func(h, m int) *time.Time { x := time.Date(2027, 1, 12, h, m, 0, 0, time.UTC); return &x }
	build := func(c facts.Commit) *Evidence {
		ev := NewEvidence(&investigationv1.Alert{AlertName: "RestartsHigh", Namespace: "tickets", Service: "seat-map", StartsAt: timestamppb.New(alertAt)}, nil)
		ev.Deployments = []Deployment{{Deployment: facts.Deployment{Name: "seat-map", Namespace: "tickets", Replicas: 2}}}
		for _, n := range []string{"seat-map-6d5c-a1", "seat-map-6d5c-b2"} {
			ev.Pods = append(ev.Pods, Pod{Pod: facts.Pod{Namespace: "tickets", Name: n, OwnerKind: "ReplicaSet", OwnerName: "seat-map-6d5c", Restarts: 3,
				Containers: []facts.Container{{Name: "seat-map", LastReason: "OOMKilled", LastFinishedAt: at(10, 5), LimitsMemory: "300Mi"}}}})
		}
		ev.Events = []Event{{Event: facts.Event{Type: "Warning", Reason: "BackOff", InvolvedKind: "Pod", InvolvedName: "seat-map-6d5c-a1", FirstSeen: at(9, 50)}}}
		ev.Commits = []Commit{{Commit: c}}
		ev.Deploys = []Deploy{{Deploy: facts.Deploy{Service: "seat-map", Namespace: "tickets", Revision: c.SHA[:7], PreviousRevision: "0a0a0a0", StartedAt: at(7, 0), FinishedAt: at(7, 3)}}}
		return ev
	}
	lead := Finding{Mode: "oom_killed", Category: catResource, Score: 0.85, Entity: "deployment/tickets/seat-map", Statement: "Container seat-map is OOMKilled at its memory limit of 300Mi"}
	values := facts.Commit{SHA: "c0ffee12345", Service: "seat-map", Message: "right-size from the cost report", Summary: "resources.limits.memory 1Gi -> 300Mi", Timestamp: at(-30, 0),
		Files: []facts.CommitFile{{Path: "deploy/values.yaml", ChangeType: facts.ChangeConfig}}, ChangeTypes: []string{facts.ChangeConfig}}
	ev := build(values)
	if onset, ok := ev.incidentOnset(); !ok || !onset.Equal(*at(9, 50)) {
		t.Errorf("onset %v, want the first Warning event of the target's pods (09:50)", onset)
	}
	f, ok := ev.boundSetByChange([]Finding{lead})
	if !ok {
		t.Fatal("no finding for the release that lowered the memory limit the containers die at")
	}
	if f.Category != catConfig || f.Entity != "commit/c0ffee1" {
		t.Errorf("finding %s on %s, want a configuration error on the release's commit", f.Category, f.Entity)
	}
	if !strings.Contains(f.Statement, "deploy of seat-map") || !strings.Contains(f.Statement, "300Mi") || !strings.Contains(f.Statement, "09:50") {
		t.Errorf("statement %q must name the release, the limit and the onset", f.Statement)
	}

	code := values
	code.Files, code.ChangeTypes, code.Summary = []facts.CommitFile{{Path: "src/render.go", ChangeType: facts.ChangeFeature}}, []string{facts.ChangeFeature}, "render seats faster"
	if f, ok := build(code).boundSetByChange([]Finding{lead}); ok {
		t.Errorf("a code release was read as the bound's change: %s", f.Statement)
	}
	late := values
	ev = build(late)
	ev.Deploys[0].StartedAt, ev.Deploys[0].FinishedAt = at(10, 30), at(10, 33)
	ev.Commits[0].Timestamp = at(10, 20)
	if f, ok := ev.boundSetByChange([]Finding{lead}); ok {
		t.Errorf("a release after the onset was read as the cause: %s", f.Statement)
	}
}

// A runtime's warning category is a warning whatever level a logger gave
// it, and no failing line however often it repeats; an error that names
// a warning later in its text stays an error.
func TestWarningClassLines(t *testing.T) {
	ev := NewEvidence(nil, nil)
	for _, tc := range []struct {
		msg     string
		failing bool
	}{
		{"DeprecationWarning: the 'datetime.utcnow' API is deprecated and scheduled for removal", false},
		{"(node:12) [DEP0005] DeprecationWarning: Buffer() is deprecated", false},
		{"sqlalchemy.exc.SAWarning: relationship will copy column", false},
		{"payment failed: card declined (see UserWarning above)", true},
		// A client that went away before its answer is no failure of the
		// service; a server that closed on its client is.
		{"websocket write failed: broken pipe (client kiosk-7 disconnected; will resync)", false},
		{"GET /stream 499 client closed request", false},
		{"redis: write tcp 10.0.0.4:6379: broken pipe (server closed the connection)", true},
		{"MySQL server has gone away", true},
	} {
		l := LogLine{LogLine: facts.LogLine{Level: "ERROR", Message: tc.msg}}
		if got := ev.failingLine(l); got != tc.failing {
			t.Errorf("failingLine(%q) = %v, want %v", tc.msg, got, tc.failing)
		}
		if lv := logLevel(l.LogLine); (lv == "ERROR") != tc.failing {
			t.Errorf("logLevel(%q) = %s", tc.msg, lv)
		}
	}
}
