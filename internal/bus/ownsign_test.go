package bus

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/facts"
)

// seededKeys holds a key pair for each service, derived from its name.
type seededKeys struct{}

func (seededKeys) SigningKey(service string) (ed25519.PrivateKey, bool) {
	seed := sha256.Sum256([]byte("test key of " + service))
	return ed25519.NewKeyFromSeed(seed[:]), true
}

func (k seededKeys) PublicKey(service string) (ed25519.PublicKey, bool) {
	priv, _ := k.SigningKey(service)
	return priv.Public().(ed25519.PublicKey), true
}

// processBus is a Bus of one process, without a connection: it signs and
// opens events (sign, open) with its own cache of verified signatures.
func processBus(signer string) *Bus {
	return &Bus{cfg: Config{Keys: seededKeys{}}, signer: signer, verified: &verifiedCache{}, logger: slog.New(slog.DiscardHandler)}
}

// factsPin is an added pin event whose pin carries metadata given as the
// encoded fields of a google.protobuf.Struct (in the pin's unknown fields,
// as the tools service publishes it).
func factsPin(t *testing.T, id string, structFields []byte) *evidencev1.PinEvent {
	t.Helper()
	ev := &evidencev1.PinEvent{
		EventId: id + ".added.v1", Kind: evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED, SessionId: "s",
		Pin: &evidencev1.EvidencePin{Id: id, SessionId: "s", Claim: "pod web-1 is OOMKilled", SourceTool: "check_pod_status", Success: true, RawOutput: "OOMKilled", Version: 1},
	}
	ev.Pin.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, pinMetadataField, protowire.BytesType), structFields))
	return ev
}

// signedMsg is ev as b publishes it: encoded, headers, signed.
func signedMsg(t *testing.T, b *Bus, ev *evidencev1.PinEvent) *nats.Msg {
	t.Helper()
	data, err := proto.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	msg := &nats.Msg{Subject: PinSubject("s", ev.GetKind()), Data: data, Header: nats.Header{}}
	msg.Header.Set(HeaderEventKind, EventKindPin)
	if err := b.sign(msg); err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestOwnSignedFactsNotCheckedAgain: a reader skips the check that a pin's
// facts decode (validStruct) only for an event its own process encoded and
// signed, of at most ownFactsMax bytes. The same bytes signed in another
// process, with the same key, are checked; facts that do not decode are
// refused there; an event of this process's above the bound is checked; a
// forged event is refused whatever its facts.
func TestOwnSignedFactsNotCheckedAgain(t *testing.T) {
	ctx := context.Background()
	good, ok := facts.AppendStruct(nil, map[string]any{"pods": []any{map[string]any{"name": "web-1", "reason": "OOMKilled", "restarts": 40.0}}})
	if !ok {
		t.Fatal("AppendStruct refused plain facts")
	}
	// A string value that is not UTF-8, which protobuf-go refuses to decode
	// (no encoder of this process makes it: hand-built).
	notUTF8 := protowire.AppendTag(nil, structFieldsField, protowire.BytesType)
	entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "reason")
	value := protowire.AppendBytes(protowire.AppendTag(nil, valueStringField, protowire.BytesType), []byte{0xff, 0xfe})
	entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), value)
	notUTF8 = protowire.AppendBytes(notUTF8, entry)
	// Facts nested beyond protobuf-go's recursion limit: more than
	// ownFactsMax bytes, as any such nesting is.
	deep := []byte(nil)
	for range maxFactsRecursion/2 + 10 {
		v := protowire.AppendBytes(protowire.AppendTag(nil, valueStructField, protowire.BytesType), deep)
		e := protowire.AppendBytes(protowire.AppendTag(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "k"), 2, protowire.BytesType), v)
		deep = protowire.AppendBytes(protowire.AppendTag(nil, structFieldsField, protowire.BytesType), e)
	}
	// Good facts above the bound: checked, and accepted.
	big, ok := facts.AppendStruct(nil, map[string]any{"log": strings.Repeat("x", ownFactsMax)})
	if !ok {
		t.Fatal("AppendStruct refused a long string")
	}
	if validStruct(notUTF8, 0) || validStruct(deep, 0) || !validStruct(good, 0) || !validStruct(big, 0) {
		t.Fatal("the test's facts are not what they should be")
	}

	tools, critic := processBus("tools"), processBus("critic")
	elsewhere := processBus("tools") // another process: the same keys, its own cache
	reader := processBus("brain")
	reader.verified = tools.verified // the tools' process (one cache per process)
	type tamper func(m *nats.Msg)
	for _, tc := range []struct {
		name     string
		signer   *Bus // who signs; the reader is in the tools' process
		facts    []byte
		tamper   tamper
		wantOwn  bool   // the check is skipped
		wantErr  string // "" accepted; "forged"; "undecodable"
		skipOpen bool   // only ownFacts is asserted
	}{
		{name: "signed here", signer: tools, facts: good, wantOwn: true},
		{name: "signed in another process", signer: elsewhere, facts: good},
		{name: "signed in another process, facts not UTF-8", signer: elsewhere, facts: notUTF8, wantErr: "undecodable"},
		{name: "signed in another process, facts too deep", signer: elsewhere, facts: deep, wantErr: "undecodable"},
		{name: "signed here, above the bound, facts too deep", signer: tools, facts: deep, wantErr: "undecodable"},
		{name: "signed here, above the bound", signer: tools, facts: big},
		// Bytes none of this process's encoders makes: the check is
		// skipped, which is what the bound and the encoders stand for.
		{name: "signed here, hand-built facts not UTF-8", signer: tools, facts: notUTF8, wantOwn: true, skipOpen: true},
		{name: "signed here, payload changed after", signer: tools, facts: good, wantErr: "forged", tamper: func(m *nats.Msg) {
			m.Data = append([]byte(nil), m.Data...)
			m.Data[len(m.Data)-1] ^= 1
		}},
		{name: "signed here, moved to another session", signer: tools, facts: good, wantErr: "forged", tamper: func(m *nats.Msg) {
			m.Subject = PinSubject("other", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED)
		}},
		{name: "signed here, claimed by another signer", signer: tools, facts: good, wantErr: "forged", tamper: func(m *nats.Msg) {
			m.Header.Set(HeaderSigner, "router")
		}},
		{name: "signed here by a service that may not add pins", signer: critic, facts: good, wantErr: "forged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := signedMsg(t, tc.signer, factsPin(t, "p-"+strings.ReplaceAll(tc.name, " ", "-"), tc.facts))
			if tc.tamper != nil {
				tc.tamper(msg)
			}
			if tc.wantErr != "forged" {
				raw, _ := base64.RawStdEncoding.DecodeString(msg.Header.Get(HeaderSignature))
				pub, _ := seededKeys{}.PublicKey("tools")
				ok, own := reader.verifyEvent(pub, "tools", msg.Subject, EventKindPin, msg.Data, raw, msg.Header.Get(HeaderSignedBatch))
				if !ok || own != tc.wantOwn {
					t.Fatalf("verifyEvent = %v, ownFacts %v; want true, %v", ok, own, tc.wantOwn)
				}
			}
			if tc.skipOpen {
				return
			}
			for _, encoded := range []bool{true, false} {
				ev, err := reader.open(ctx, msg.Subject, 1, msg.Header, msg.Data, readOpts{factsEncoded: encoded})
				switch tc.wantErr {
				case "":
					if err != nil {
						t.Fatalf("factsEncoded=%v: refused: %v", encoded, err)
					}
					// Passed on (encoded again, as StreamEvents sends it), the
					// event is the one protobuf-go decodes from the stored bytes.
					want := &evidencev1.PinEvent{}
					if err := proto.Unmarshal(msg.Data, want); err != nil {
						t.Fatal(err)
					}
					again, err := proto.Marshal(ev.GetPin())
					if err != nil {
						t.Fatal(err)
					}
					got := &evidencev1.PinEvent{}
					if err := proto.Unmarshal(again, got); err != nil || !proto.Equal(got, want) {
						t.Fatalf("factsEncoded=%v: passed on as %v (%v), want %v", encoded, got, err, want)
					}
				case "forged":
					if !errors.Is(err, ErrForged) {
						t.Fatalf("factsEncoded=%v: %v, want refused as forged", encoded, err)
					}
				case "undecodable":
					if err == nil || errors.Is(err, ErrForged) {
						t.Fatalf("factsEncoded=%v: %v, want refused as undecodable", encoded, err)
					}
				}
			}
		})
	}
}

// TestSingleEventSignedOverDigest: an event published alone is signed as
// a group of one (its digest listed in HeaderSignedBatch, the signature
// over the list); a reader in another process verifies it, and one signed
// alone over its whole bytes (every event stored before) too; the event
// with its payload changed, moved to another session, with its group
// header removed or a forged payload's digest listed is refused.
func TestSingleEventSignedOverDigest(t *testing.T) {
	ctx := context.Background()
	good, _ := facts.AppendStruct(nil, map[string]any{"pods": []any{"web-1"}})
	tools, reader := processBus("tools"), processBus("brain")
	genuine := signedMsg(t, tools, factsPin(t, "p1", good))
	digests, err := base64.RawStdEncoding.DecodeString(genuine.Header.Get(HeaderSignedBatch))
	if err != nil || len(digests) != sha256.Size {
		t.Fatalf("a single event's group header holds %d bytes (%v), want one digest", len(digests), err)
	}
	clone := func() *nats.Msg {
		m := &nats.Msg{Subject: genuine.Subject, Data: append([]byte(nil), genuine.Data...), Header: nats.Header{}}
		for k, v := range genuine.Header {
			m.Header[k] = append([]string(nil), v...)
		}
		return m
	}
	key, _ := seededKeys{}.SigningKey("tools")
	forgedData, _ := proto.Marshal(factsPin(t, "forged", good))
	for _, tc := range []struct {
		name   string
		msg    func() *nats.Msg
		wantOK bool
	}{
		{"as published", clone, true},
		{"signed alone over its bytes (stored before)", func() *nats.Msg {
			m := clone()
			m.Header.Del(HeaderSignedBatch)
			sig := ed25519.Sign(key, []byte("tools\n"+m.Subject+"\n"+EventKindPin+"\n"+string(m.Data)))
			m.Header.Set(HeaderSignature, base64.RawStdEncoding.EncodeToString(sig))
			return m
		}, true},
		{"payload changed", func() *nats.Msg { m := clone(); m.Data = forgedData; return m }, false},
		{"moved to another session", func() *nats.Msg {
			m := clone()
			m.Subject = PinSubject("other", evidencev1.PinEventKind_PIN_EVENT_KIND_ADDED)
			return m
		}, false},
		{"group header removed", func() *nats.Msg { m := clone(); m.Header.Del(HeaderSignedBatch); return m }, false},
		{"a forged payload's digest listed", func() *nats.Msg {
			m := clone()
			d := sha256.Sum256([]byte("tools\n" + m.Subject + "\n" + EventKindPin + "\n" + string(forgedData)))
			m.Header.Set(HeaderSignedBatch, base64.RawStdEncoding.EncodeToString(d[:]))
			m.Data = forgedData
			return m
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.msg()
			for name, r := range map[string]*Bus{"another process": reader, "the signing process": tools} {
				ev, err := r.open(ctx, m.Subject, 1, m.Header, m.Data, readOpts{factsEncoded: true})
				if tc.wantOK && (err != nil || ev.GetPin().GetPin().GetId() != "p1") {
					t.Errorf("%s: refused: %v", name, err)
				}
				if !tc.wantOK && !errors.Is(err, ErrForged) {
					t.Errorf("%s: %v, want refused as forged", name, err)
				}
			}
		})
	}
}
