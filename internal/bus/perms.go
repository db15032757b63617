package bus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"golang.org/x/crypto/bcrypt"
)

// NATS users and their permissions. Every client authenticates: the
// services as UserPrefix+<service> (a process running several services, and
// the in-process connection of -target=all, as UserAll), subscribers of the
// evidence stream as UserReader (read-only). Anonymous clients are refused.
const (
	UserPrefix = "rcamesh-"
	UserAll    = UserPrefix + "all"
	UserReader = "reader"
)

// writers lists, per KV bucket, the services that write it.
var writers = map[string][]string{
	BucketSessions:     {"brain"},
	BucketRecords:      {"brain"},
	BucketReports:      {"delivery"},
	BucketFingerprints: {"brain"},    // the intake's alert dedup guardrail: one writer
	BucketPageClaims:   {"delivery"}, // delivery's one page per fingerprint and window
	BucketCritic:       {"critic"},   // the critic replicas' per-session lease and verdict stamp
	BucketHistory:      {"history"},  // past investigations (the history module's KV store)
	BucketOpen:         {"brain"},    // investigations not yet final (the orphan sweeper's index)
	BucketOutbox:       {"delivery"}, // pages no destination has accepted yet
}

// workPublishers enqueue alerts.
var workPublishers = []string{"brain"}

// Services are the services (and the modules that publish or write: SAST
// triage, the history recorder; and the REST gateway of split mode, which
// publishes and writes nothing) the permission tables know.
var Services = []string{"router", "tools", "critic", "brain", "delivery", "triage", "history", "gateway"}

func eventSubject(key string) string {
	switch key {
	case "lifecycle":
		return SubjectPrefix + ".session.*.lifecycle.>"
	default: // pin.<kind>
		return SubjectPrefix + ".session.*." + key
	}
}

// jsRead are the JetStream API subjects a reader of the streams publishes
// to (requests; replies come on _INBOX).
func jsRead(streams ...string) []string {
	out := []string{"$JS.API.INFO", "$JS.FC.>"}
	for _, s := range streams {
		out = append(out,
			"$JS.API.STREAM.INFO."+s,
			"$JS.API.STREAM.MSG.GET."+s,
			"$JS.API.DIRECT.GET."+s, "$JS.API.DIRECT.GET."+s+".>",
			"$JS.API.CONSUMER.CREATE."+s, "$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.DURABLE.CREATE."+s+".>",
			"$JS.API.CONSUMER.INFO."+s+".>",
			"$JS.API.CONSUMER.MSG.NEXT."+s+".>",
			"$JS.API.CONSUMER.DELETE."+s+".>",
			"$JS.ACK."+s+".>",
		)
	}
	return out
}

// denied for every user: nobody deletes or purges a stream or its messages
// over NATS (an operator does, with the server's own tools).
var denied = []string{"$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>", "$JS.API.ACCOUNT.PURGE.>"}

// Permissions of the NATS user of services (one or more of Services).
func Permissions(services ...string) *server.Permissions {
	streams := []string{StreamEvents, StreamWork}
	for b := range writers {
		streams = append(streams, "KV_"+b)
	}
	sort.Strings(streams)
	pub := jsRead(streams...)
	// Every service creates or updates the two streams at start-up.
	for _, s := range []string{StreamEvents, StreamWork} {
		pub = append(pub, "$JS.API.STREAM.CREATE."+s, "$JS.API.STREAM.UPDATE."+s)
	}
	for _, svc := range services {
		for key, pubs := range Publishers {
			if slices.Contains(pubs, svc) {
				pub = append(pub, eventSubject(key))
			}
		}
		for b, ws := range writers {
			if slices.Contains(ws, svc) {
				pub = append(pub, "$KV."+b+".>", "$JS.API.STREAM.CREATE.KV_"+b, "$JS.API.STREAM.UPDATE.KV_"+b)
			}
		}
		if slices.Contains(workPublishers, svc) {
			pub = append(pub, WorkSubjects)
		}
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: dedupe(pub), Deny: denied},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}

// ReaderPermissions are read-only: subscribe to session events, create
// consumers of the events stream and read from them, nothing else.
func ReaderPermissions() *server.Permissions {
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: jsRead(StreamEvents), Deny: append([]string{SubjectPrefix + ".>"}, denied...)},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", SessionSubjects}},
	}
}

func dedupe(xs []string) []string {
	sort.Strings(xs)
	return slices.Compact(xs)
}

// combinable are the services a process may run together under a NATS
// user with the union of their rights only (UserFor); any other mix runs
// as UserAll.
var combinable = []string{"brain", "critic", "delivery", "router", "tools"}

// UserFor is the NATS user of a process running targets: rcamesh-<service>
// for one, rcamesh-<a>+<b>... (sorted) for several of the five services, so
// that such a process has their rights and no other's, else UserAll.
func UserFor(targets []string) string {
	if len(targets) == 1 {
		return UserPrefix + targets[0]
	}
	for _, t := range targets {
		if !slices.Contains(combinable, t) {
			return UserAll
		}
	}
	sorted := slices.Sorted(slices.Values(targets))
	return UserPrefix + strings.Join(slices.Compact(sorted), "+")
}

// combinations are every set of two or more of the combinable services.
func combinations() [][]string {
	var out [][]string
	for mask := 1; mask < 1<<len(combinable); mask++ {
		var set []string
		for i, s := range combinable {
			if mask&(1<<i) != 0 {
				set = append(set, s)
			}
		}
		if len(set) > 1 {
			out = append(out, set)
		}
	}
	return out
}

// Users are the NATS users of the mesh with their permissions; password
// gives each one's password. A reader user is added when readerPassword is
// set.
func Users(password func(user string) string, readerPassword string) []*server.User {
	users := []*server.User{{Username: UserAll, Password: password(UserAll), Permissions: Permissions(Services...)}}
	for _, svc := range Services {
		u := UserPrefix + svc
		users = append(users, &server.User{Username: u, Password: password(u), Permissions: Permissions(svc)})
	}
	for _, set := range combinations() {
		u := UserFor(set)
		users = append(users, &server.User{Username: u, Password: password(u), Permissions: Permissions(set...)})
	}
	if readerPassword != "" {
		users = append(users, &server.User{Username: UserReader, Password: readerPassword, Permissions: ReaderPermissions()})
	}
	return users
}

// checkUsers guards against an empty password (which NATS would accept).
func checkUsers(users []*server.User) error {
	for _, u := range users {
		if u.Password == "" {
			return fmt.Errorf("bus: NATS user %s has no password", u.Username)
		}
	}
	return nil
}

// ServerConfig is a nats-server configuration (JSON, which the server's
// config format accepts) for an external NATS serving the mesh: JetStream
// on storeDir, clients on listen, the users of Users with bcrypt-hashed
// passwords, nobody anonymous.
func ServerConfig(users []*server.User, storeDir, listen string) ([]byte, error) {
	out, err := configUsers(users)
	if err != nil {
		return nil, err
	}
	return encodeConfig(map[string]any{
		"listen":        listen,
		"http":          "127.0.0.1:8222",
		"max_payload":   8 << 20,
		"jetstream":     map[string]any{"store_dir": storeDir},
		"authorization": map[string]any{"users": out},
	})
}

// AuthorizationConfig is only the authorization block of ServerConfig (the
// users with bcrypt-hashed passwords and their permissions): a file that an
// existing nats-server configuration includes (`include auth.conf`; the
// official NATS Helm chart's config.merge.$include), leaving listen ports,
// cluster routes and JetStream to that configuration.
func AuthorizationConfig(users []*server.User) ([]byte, error) {
	out, err := configUsers(users)
	if err != nil {
		return nil, err
	}
	return encodeConfig(map[string]any{"authorization": map[string]any{"users": out}})
}

type configSubjects struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

type configUser struct {
	User        string `json:"user"`
	Password    string `json:"password"`
	Permissions struct {
		Publish   configSubjects `json:"publish"`
		Subscribe configSubjects `json:"subscribe"`
	} `json:"permissions"`
}

// configUsers are users as a nats-server config lists them, passwords
// bcrypt-hashed.
func configUsers(users []*server.User) ([]configUser, error) {
	if err := checkUsers(users); err != nil {
		return nil, err
	}
	var out []configUser
	for _, u := range users {
		// The service users' passwords are 256-bit HMAC outputs: no
		// dictionary reaches them, so the cheapest cost suffices and keeps
		// every connect fast; other passwords get the default cost.
		cost := bcrypt.DefaultCost
		if strings.HasPrefix(u.Username, UserPrefix) {
			cost = bcrypt.MinCost
		}
		h, err := bcrypt.GenerateFromPassword([]byte(u.Password), cost)
		if err != nil {
			return nil, fmt.Errorf("bus: hash the password of %s: %w", u.Username, err)
		}
		cu := configUser{User: u.Username, Password: string(h)}
		if p := u.Permissions; p != nil {
			if p.Publish != nil {
				cu.Permissions.Publish = configSubjects{Allow: p.Publish.Allow, Deny: p.Publish.Deny}
			}
			if p.Subscribe != nil {
				cu.Permissions.Subscribe = configSubjects{Allow: p.Subscribe.Allow, Deny: p.Subscribe.Deny}
			}
		}
		out = append(out, cu)
	}
	return out, nil
}

func encodeConfig(cfg map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // nats-server's parser knows no \u escapes; subjects hold '>'
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, fmt.Errorf("bus: encode the NATS config: %w", err)
	}
	return buf.Bytes(), nil
}
