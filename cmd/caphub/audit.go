package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// auditPageSize is how many events audit list reads at a time.
const auditPageSize = 1000

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List, verify and prune the audit chain",
		Long: `The audit chain records every registration, deprecation, policy decision, approval and
invocation as an event whose hash covers the previous event's hash, so that altering, removing
or reordering a stored event breaks the chain where it happened. Its retention (caphub serve
--audit-max-events, --audit-max-age, or caphub audit prune) removes the oldest events and
leaves a checkpoint, recorded in the chain, from which the rest still verifies. These commands
read the local database (--db, $CAPHUB_DB); list and verify also read a running caphub's chain
with --server, with a token that has the admin scope (prune runs where the database is).`,
		Example: "  caphub audit list --since 24h --kind invocation\n  caphub audit verify\n  caphub audit prune --max-age 90d\n  caphub audit verify --server https://caphub.example.com",
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newAuditListCmd(), newAuditVerifyCmd(), newAuditPruneCmd())
	return cmd
}

func newAuditListCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List audit events, oldest first",
		Example: "  caphub audit list --since 2h\n  caphub audit list --capability ossa:security/scan_vulnerabilities --kind invocation\n" +
			"  caphub audit list --since 2025-06-01 --limit 100 --format json",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			f := chain.Filter{}
			f.Capability, _ = cmd.Flags().GetString("capability")
			f.Kind, _ = cmd.Flags().GetString("kind")
			f.Actor, _ = cmd.Flags().GetString("actor")
			f.AfterSeq, _ = cmd.Flags().GetInt64("after-seq")
			limit, _ := cmd.Flags().GetInt("limit")
			if limit < 0 {
				return &usageError{fmt.Errorf("--limit %d: give 0 (every event) or more", limit)}
			}
			if f.AfterSeq < 0 {
				return &usageError{fmt.Errorf("--after-seq %d: give 0 (from the first event) or more", f.AfterSeq)}
			}
			if since, _ := cmd.Flags().GetString("since"); since != "" {
				if f.Since, err = parseSince(since, time.Now()); err != nil {
					return &usageError{err}
				}
			}
			if until, _ := cmd.Flags().GetString("until"); until != "" {
				if f.Until, err = parseTimeFlag("--until", until, time.Now()); err != nil {
					return &usageError{err}
				}
			}
			return withAuditChain(cmd, func(l auditChain) error {
				events, err := collectEvents(cmd, l, f, limit)
				if err != nil {
					return err
				}
				return printEvents(cmd, format, events)
			})
		},
	}
	cmd.Flags().String("since", "", "events at or after TIME (RFC 3339, or a date 2006-01-02 in UTC) or DURATION ago (90m, 24h, 7d)")
	cmd.Flags().String("capability", "", "events about a capability URI; without @version, about any version of it")
	cmd.Flags().String("until", "", "events before TIME (RFC 3339, or a date 2006-01-02 in UTC) or DURATION ago (90m, 24h, 7d)")
	cmd.Flags().String("kind", "", "events of one kind: registered, deprecated, policy_decision, approval, invocation, token_created, policy_set, …")
	cmd.Flags().String("actor", "", "events of one actor, exactly: token:NAME, an agent id, cli:USER, caphub")
	cmd.Flags().Int("limit", 0, "print at most N events (default: every match)")
	cmd.Flags().Int64("after-seq", 0, "events after this sequence number (to continue a listing)")
	addFormatFlag(cmd)
	return cmd
}

// collectEvents pages through the events the filter selects, up to limit
// (0: all).
func collectEvents(cmd *cobra.Command, l auditChain, f chain.Filter, limit int) ([]chain.Event, error) {
	out := []chain.Event{}
	for {
		f.Limit = auditPageSize
		if limit > 0 {
			f.Limit = min(auditPageSize, limit-len(out))
		}
		page, err := l.List(cmd.Context(), f)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < f.Limit || limit > 0 && len(out) >= limit {
			return out, nil
		}
		f.AfterSeq = page[len(page)-1].Seq
	}
}

func printEvents(cmd *cobra.Command, format string, events []chain.Event) error {
	out := cmd.OutOrStdout()
	if format == "json" {
		return writeJSON(out, map[string]any{"items": events})
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tKIND\tACTOR\tCAPABILITY\tDATA")
	for _, e := range events {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.UTC().Format("2006-01-02T15:04:05.000000Z"), e.Kind,
			orDash(e.Actor), orDash(e.Capability), firstLine(string(e.Data), 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(events) == 1 {
		fmt.Fprintln(out, "1 event")
	} else {
		fmt.Fprintf(out, "%d events\n", len(events))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newAuditVerifyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the whole audit chain and that every stored version has its registration event",
		Long: `verify walks the audit chain from its first event and checks that no event is missing, that
each links to the one before it, and that each one's hash matches its content. It then checks
that every capability version stored in the database has its "registered" event: caphub
commits a version and its event in one transaction, so a version without one was stored past
caphub, or its event was removed (which the chain alone cannot show when the newest events
were cut off). Versions stored before the chain's first event predate the audit chain and are
only counted. Both checks stream, a page at a time.

Once the chain was pruned, verify starts from its checkpoint: the first event kept must link
to the last pruned one's hash, and the "pruned" event that recorded the cut must match the
checkpoint; events deleted from the start without a checkpoint, or a forged checkpoint, break
the chain. Versions registered before the checkpoint are counted apart (their events were
pruned).

It prints the event count, where it verified from and the head hash when the chain is intact,
then the registration check. Exit 0 when both pass; exit 1 when the chain is broken (naming the first broken link)
or when versions have no registration event (naming them). Keep the head hash elsewhere:
removing the newest events leaves a shorter chain that still verifies, with another head.

With --server it verifies a running caphub's chain and database where they are (GET
/v1/audit/verify, a token with the admin scope) and prints the same.`,
		Example: "  caphub audit verify\n  caphub audit verify --db postgres://caphub@db/caphub --format json\n  caphub audit verify --server https://caphub.example.com --token-file ~/.caphub-admin-token",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			return withAuditChain(cmd, func(l auditChain) error {
				res, err := l.Verify(cmd.Context())
				if err != nil {
					return err
				}
				if format == "json" {
					if err := writeJSON(cmd.OutOrStdout(), res); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), res.String())
				}
				switch {
				case res.Break != nil:
					return &silentError{"the audit chain is broken"}
				case !res.OK:
					return &silentError{"stored versions have no registration event"}
				}
				return nil
			})
		},
	}
	addFormatFlag(cmd)
	return cmd
}

// withAuditChain runs fn on the audit chain of the local database, or of
// the server --server names.
func withAuditChain(cmd *cobra.Command, fn func(auditChain) error) error {
	cfg, c, err := remoteOf(cmd)
	if err != nil {
		return err
	}
	if c != nil {
		return fn(c.Audit())
	}
	log, st, err := openAuditLog(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(localAudit{log: log, st: st})
}

// withAuditLog runs fn on the audit chain of the local database, and the
// database's store, and closes them (caphub audit prune). It refuses
// --server: the chain is pruned where its database is.
func withAuditLog(cmd *cobra.Command, fn func(l *audit.Log, st registry.Store) error) error {
	cfg, err := configFrom(cmd, slog.LevelWarn)
	if err != nil {
		return err
	}
	if server := cfg.server; server != "" {
		return &usageError{fmt.Errorf("%s prunes the audit chain of a local database (--db or $CAPHUB_DB), not of a server (%s, from --server or $CAPHUB_SERVER): run it with the server's database (or let caphub serve --audit-max-events/--audit-max-age prune), and unset CAPHUB_SERVER", cmd.CommandPath(), server)}
	}
	log, st, err := openAuditLog(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(log, st)
}

// parseSince reads --since: an RFC 3339 time, a date (midnight UTC), or a
// duration before now (Go syntax, plus "d" for days: 7d, 1d12h).
func parseSince(s string, now time.Time) (time.Time, error) { return parseTimeFlag("--since", s, now) }

// parseTimeFlag reads a time flag as parseSince does; flag names it in the
// error.
func parseTimeFlag(flag, s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	d, err := parseAgo(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%s %q: give a time (2025-06-01T12:00:00Z), a date (2025-06-01) or how long ago (90m, 24h, 7d)", flag, s)
	}
	return now.Add(-d), nil
}

// parseAgo reads a Go duration that may start with a number of days ("7d",
// "1d12h"), up to about 292 years (time.Duration's limit).
func parseAgo(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 0 || int64(n) > math.MaxInt64/int64(24*time.Hour) {
		return 0, fmt.Errorf("bad day count %q", days)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, err
		}
		if r > 0 && d > math.MaxInt64-r {
			return 0, errors.New("the duration is too long")
		}
		d += r
	}
	return d, nil
}

// Environment variables of the audit retention (caphub serve, and the
// defaults of caphub audit prune).
const (
	envAuditMaxEvents = "CAPHUB_AUDIT_MAX_EVENTS"
	envAuditMaxAge    = "CAPHUB_AUDIT_MAX_AGE"
)

// addAuditRetentionFlags adds serve's audit retention flags.
func addAuditRetentionFlags(cmd *cobra.Command) {
	cmd.Flags().Int("audit-max-events", 0, "keep the newest N events of the audit chain and prune older ones in the background (a checkpoint keeps the chain verifiable); default $"+envAuditMaxEvents+", else 0: keep every event")
	cmd.Flags().String("audit-max-age", "", "prune audit events older than DURATION (90m, 720h, 90d) in the background; default $"+envAuditMaxAge+", else keep every event")
}

// auditRetentionFrom reads a retention from the flags named events and age
// (an int and a string), else the variables CAPHUB_AUDIT_MAX_EVENTS and
// CAPHUB_AUDIT_MAX_AGE.
func auditRetentionFrom(cmd *cobra.Command, events, age string) (audit.Retention, error) {
	var r audit.Retention
	n, err := intSetting(cmd, events, envAuditMaxEvents)
	if err != nil {
		return r, err
	}
	if n < 0 {
		return r, &usageError{fmt.Errorf("--%s %d (or $%s): give a number of events to keep, or 0 to keep every event", events, n, envAuditMaxEvents)}
	}
	r.MaxEvents = int64(n)
	if r.MaxAge, err = parseMaxAge(stringSetting(cmd, age, envAuditMaxAge)); err != nil {
		return r, &usageError{fmt.Errorf("--%s (or $%s): %w", age, envAuditMaxAge, err)}
	}
	return r, nil
}

// parseMaxAge reads a maximum age: "" or 0 for none, else a positive
// duration as parseAgo reads it (90m, 720h, 90d).
func parseMaxAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := parseAgo(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age: give a duration such as 90m, 720h or 90d, or 0 to keep every event", s)
	}
	return d, nil
}

func newAuditPruneCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove the oldest audit events, leaving a checkpoint the rest verifies from",
		Long: `prune removes the oldest events of the audit chain that the limits do not keep: beyond the
newest --max-events, or older than --max-age (either or both; default $` + envAuditMaxEvents + ` and
$` + envAuditMaxAge + `, the settings of caphub serve --audit-max-events and --audit-max-age, which
prunes in the background). It works in transactions of at most 10,000 events, so a running
server's appenders wait for one batch at most, and each one leaves a checkpoint (the last
pruned event's seq, hash and time) and appends a "pruned" event recording it: caphub audit
verify then starts from the checkpoint, and a forged one breaks the chain.

It prunes only an intact chain: it first checks the checkpoint and every event it is about
to remove, and refuses, removing nothing, when one is broken (run caphub audit verify).
Exit 0 when it pruned, or found nothing to prune; 1 when it refused or failed.`,
		Example: "  caphub audit prune --max-events 1000000\n  caphub audit prune --max-age 90d --format json\n  caphub audit prune --max-events 100000 --max-age 30d --db postgres://caphub@db/caphub",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			format, err := outputFormat(cmd)
			if err != nil {
				return err
			}
			keep, err := auditRetentionFrom(cmd, "max-events", "max-age")
			if err != nil {
				return err
			}
			if keep.IsZero() {
				return &usageError{fmt.Errorf("give --max-events N, --max-age DURATION or both (or set $%s, $%s): without a limit there is nothing to prune", envAuditMaxEvents, envAuditMaxAge)}
			}
			return withAuditLog(cmd, func(l *audit.Log, _ registry.Store) error {
				res, err := l.Prune(cmd.Context(), keep)
				if err != nil {
					return err
				}
				if format == "json" {
					return writeJSON(cmd.OutOrStdout(), res)
				}
				fmt.Fprintln(cmd.OutOrStdout(), res.String())
				return nil
			})
		},
	}
	cmd.Flags().Int("max-events", 0, "keep the newest N events (the event recording the prune comes on top); default $"+envAuditMaxEvents)
	cmd.Flags().String("max-age", "", "remove the events older than DURATION (90m, 720h, 90d); default $"+envAuditMaxAge)
	addFormatFlag(cmd)
	return cmd
}
