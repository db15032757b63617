package delivery

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	investigationv1 "github.com/rcamesh/rcamesh/gen/rcamesh/investigation/v1"
)

// The guardrails delivery owns (their owner, flag and record field are the
// contract's, package guardrail).
const (
	GuardrailConfidenceGate = investigationv1.Guardrail_GUARDRAIL_CONFIDENCE_GATE
	GuardrailDedup          = investigationv1.Guardrail_GUARDRAIL_ALERT_FINGERPRINT_DEDUP
)

// Environment variables read by RegisterFlags as flag defaults, so that
// webhook secrets need not appear on a command line.
const (
	EnvSlackWebhookURL = "RCAMESH_SLACK_WEBHOOK_URL"
	EnvWebhookURLs     = "RCAMESH_WEBHOOK_URLS" // comma-separated
	EnvWebhookSecret   = "RCAMESH_WEBHOOK_SECRET"
)

// Config holds delivery's guardrails and destinations.
type Config struct {
	// ConfidenceGate (0-1): a report below it is stored silent, not paged.
	ConfidenceGate float64
	// DedupWindow: a report for an alert fingerprint already paged within the
	// window is stored but not re-posted (deduplicated).
	DedupWindow time.Duration
	// SlackWebhookURL is a Slack incoming-webhook URL (a secret; never logged).
	SlackWebhookURL string
	// SlackWebhookURLFile reads the Slack URL from a file (mounted secret).
	SlackWebhookURLFile string
	// WebhookURLs receive the report as JSON (secrets; never logged).
	WebhookURLs []string
	// WebhookSecret, when set, signs webhook bodies: header
	// X-Rcamesh-Signature: sha256=<hex HMAC-SHA256 of the body>.
	WebhookSecret string
	// MaxTries per destination (first try included).
	MaxTries int
	// BackoffBase is the delay before the second try; it doubles per try up
	// to BackoffMax, with jitter.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// HTTPTimeout bounds one HTTP request.
	HTTPTimeout time.Duration
	// ReportBaseURL, when set, links a report: <base>/session/<id>.
	ReportBaseURL string
	// MaxMarkdownBytes caps a stored report's markdown.
	MaxMarkdownBytes int
	// PageFailures pages failed investigations (their reason) past the
	// confidence gate; false stores them silent.
	PageFailures bool
	// OutboxInterval: how often pending pages are retried (and looked for
	// after a restart).
	OutboxInterval time.Duration
	// OutboxMaxAge and OutboxMaxRounds bound how long and how often a page
	// is retried before it is given up (and logged).
	OutboxMaxAge    time.Duration
	OutboxMaxRounds int
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		ConfidenceGate:   0.70,
		DedupWindow:      4 * time.Hour,
		MaxTries:         4,
		BackoffBase:      500 * time.Millisecond,
		BackoffMax:       8 * time.Second,
		HTTPTimeout:      10 * time.Second,
		MaxMarkdownBytes: 256 << 10,
		PageFailures:     true,
		OutboxInterval:   5 * time.Second,
		OutboxMaxAge:     24 * time.Hour,
		OutboxMaxRounds:  50,
	}
}

type listFlag struct{ v *[]string }

func (l listFlag) String() string {
	if l.v == nil {
		return ""
	}
	return fmt.Sprintf("%d url(s)", len(*l.v))
}

func (l listFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l.v = append(*l.v, part)
		}
	}
	return nil
}

// RegisterFlags registers delivery's flags, prefixed "delivery.". Secret
// defaults come from RCAMESH_SLACK_WEBHOOK_URL, RCAMESH_WEBHOOK_URLS and
// RCAMESH_WEBHOOK_SECRET.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	if v := os.Getenv(EnvSlackWebhookURL); v != "" && c.SlackWebhookURL == "" {
		c.SlackWebhookURL = v
	}
	if v := os.Getenv(EnvWebhookURLs); v != "" && len(c.WebhookURLs) == 0 {
		_ = listFlag{&c.WebhookURLs}.Set(v)
	}
	if v := os.Getenv(EnvWebhookSecret); v != "" && c.WebhookSecret == "" {
		c.WebhookSecret = v
	}
	fs.Float64Var(&c.ConfidenceGate, "delivery.confidence-gate", c.ConfidenceGate, "confidence (0-1) below which a report is stored silent, not paged")
	fs.DurationVar(&c.DedupWindow, "delivery.dedup-window", c.DedupWindow, "window in which a report for an already paged alert fingerprint is not re-posted")
	fs.StringVar(&c.SlackWebhookURL, "delivery.slack-webhook-url", c.SlackWebhookURL, "Slack incoming webhook URL (secret; env "+EnvSlackWebhookURL+")")
	fs.StringVar(&c.SlackWebhookURLFile, "delivery.slack-webhook-url-file", c.SlackWebhookURLFile, "file holding the Slack incoming webhook URL")
	fs.Var(listFlag{&c.WebhookURLs}, "delivery.webhook-url", "JSON webhook URL; repeat or comma-separate (secret; env "+EnvWebhookURLs+")")
	fs.StringVar(&c.WebhookSecret, "delivery.webhook-secret", c.WebhookSecret, "HMAC-SHA256 key signing webhook bodies (env "+EnvWebhookSecret+")")
	fs.IntVar(&c.MaxTries, "delivery.max-tries", c.MaxTries, "tries per destination on 5xx, 429 and network errors")
	fs.DurationVar(&c.BackoffBase, "delivery.backoff-base", c.BackoffBase, "delay before the second try; doubles per try, with jitter")
	fs.DurationVar(&c.BackoffMax, "delivery.backoff-max", c.BackoffMax, "longest delay between tries")
	fs.DurationVar(&c.HTTPTimeout, "delivery.http-timeout", c.HTTPTimeout, "timeout of one HTTP request")
	fs.StringVar(&c.ReportBaseURL, "delivery.report-base-url", c.ReportBaseURL, "base URL of the web UI, to link reports")
	fs.IntVar(&c.MaxMarkdownBytes, "delivery.max-markdown-bytes", c.MaxMarkdownBytes, "cap of a report's markdown")
	fs.BoolVar(&c.PageFailures, "delivery.page-failures", c.PageFailures, "page failed investigations with their reason (false: store them silent)")
	fs.DurationVar(&c.OutboxInterval, "delivery.outbox-interval", c.OutboxInterval, "how often pending pages are retried, and looked for after a restart")
	fs.DurationVar(&c.OutboxMaxAge, "delivery.outbox-max-age", c.OutboxMaxAge, "age after which a page no destination accepted is given up")
	fs.IntVar(&c.OutboxMaxRounds, "delivery.outbox-max-rounds", c.OutboxMaxRounds, "retry rounds of a page before it is given up")
}

func checkURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		// Never echo the value: webhook URLs carry their secret in the path.
		return fmt.Errorf("%s is not an absolute http(s) URL", field)
	}
	return nil
}

// Validate checks the configuration; the error names the field, never a secret.
func (c *Config) Validate() error {
	var errs []error
	if c.ConfidenceGate < 0 || c.ConfidenceGate > 1 {
		errs = append(errs, fmt.Errorf("delivery.confidence-gate must be in [0,1], got %v", c.ConfidenceGate))
	}
	if c.DedupWindow < 0 {
		errs = append(errs, fmt.Errorf("delivery.dedup-window must not be negative, got %s", c.DedupWindow))
	}
	if c.MaxTries < 1 {
		errs = append(errs, fmt.Errorf("delivery.max-tries must be >= 1, got %d", c.MaxTries))
	}
	if c.BackoffBase <= 0 {
		errs = append(errs, fmt.Errorf("delivery.backoff-base must be positive, got %s", c.BackoffBase))
	}
	if c.BackoffMax < c.BackoffBase {
		errs = append(errs, fmt.Errorf("delivery.backoff-max (%s) must be >= delivery.backoff-base (%s)", c.BackoffMax, c.BackoffBase))
	}
	if c.HTTPTimeout <= 0 {
		errs = append(errs, fmt.Errorf("delivery.http-timeout must be positive, got %s", c.HTTPTimeout))
	}
	if c.MaxMarkdownBytes < 1024 {
		errs = append(errs, fmt.Errorf("delivery.max-markdown-bytes must be >= 1024, got %d", c.MaxMarkdownBytes))
	}
	if c.OutboxInterval <= 0 || c.OutboxMaxAge <= 0 || c.OutboxMaxRounds < 1 {
		errs = append(errs, fmt.Errorf("delivery.outbox-interval and delivery.outbox-max-age must be positive and delivery.outbox-max-rounds >= 1, got %s, %s, %d", c.OutboxInterval, c.OutboxMaxAge, c.OutboxMaxRounds))
	}
	if c.SlackWebhookURL != "" && c.SlackWebhookURLFile != "" {
		errs = append(errs, errors.New("delivery.slack-webhook-url and delivery.slack-webhook-url-file are exclusive"))
	}
	if c.SlackWebhookURL != "" {
		if err := checkURL("delivery.slack-webhook-url", c.SlackWebhookURL); err != nil {
			errs = append(errs, err)
		}
	}
	for i, u := range c.WebhookURLs {
		if err := checkURL(fmt.Sprintf("delivery.webhook-url[%d]", i), u); err != nil {
			errs = append(errs, err)
		}
	}
	if c.ReportBaseURL != "" {
		if err := checkURL("delivery.report-base-url", c.ReportBaseURL); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LogValue keeps secrets out of logs when a Config is logged.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Float64("confidence_gate", c.ConfidenceGate),
		slog.Duration("dedup_window", c.DedupWindow),
		slog.Bool("slack", c.SlackWebhookURL != "" || c.SlackWebhookURLFile != ""),
		slog.Int("webhooks", len(c.WebhookURLs)),
		slog.Bool("signed", c.WebhookSecret != ""),
		slog.Int("max_tries", c.MaxTries),
	)
}

// String keeps secrets out of %v formatting.
func (c Config) String() string { return c.LogValue().String() }

// Limits are delivery's live limits, its fields of the record's Guardrails.
func (c *Config) Limits() *investigationv1.Guardrails {
	return &investigationv1.Guardrails{ConfidenceGate: c.ConfidenceGate, DedupWindowMs: c.DedupWindow.Milliseconds()}
}
