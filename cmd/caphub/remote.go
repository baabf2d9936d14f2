package main

// What the administration commands (policy, approval, token, audit, agent)
// work on: the local database, or with --server ($CAPHUB_SERVER) a running
// caphub through the client, behind one interface each, so that a command
// has one code path in both modes (as registry.API does for the registry
// commands). The client sends the token of --token-file or $CAPHUB_TOKEN.

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/caphub/caphub/agent"
	"github.com/caphub/caphub/audit"
	"github.com/caphub/caphub/audit/chain"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/client"
	"github.com/caphub/caphub/governance/policy"
	"github.com/caphub/caphub/internal/auth"
	"github.com/caphub/caphub/registry"
	"github.com/spf13/cobra"
)

// newClient is the client of the server cfg names, with its token and
// timeout.
func newClient(cfg config) (*client.Client, error) {
	return client.New(cfg.server, client.WithTimeout(cfg.timeout), client.WithToken(cfg.token))
}

// remoteOf reads cmd's configuration and, when it names a server
// (--server), returns that server's client; c is nil for the local
// database. The administration commands' with… functions start with it.
func remoteOf(cmd *cobra.Command) (cfg config, c *client.Client, err error) {
	cfg, err = configFrom(cmd, slog.LevelWarn)
	if err != nil || cfg.server == "" {
		return cfg, nil, err
	}
	c, err = newClient(cfg)
	if err != nil {
		return cfg, nil, &usageError{err}
	}
	return cfg, c, nil
}

// policyStore is *policy.Policies or the server's (*client.Policies).
type policyStore interface {
	Put(ctx context.Context, p policy.Policy) error
	Get(ctx context.Context, agentID string) (*policy.Policy, error)
	List(ctx context.Context) ([]*policy.Policy, error)
	Delete(ctx context.Context, agentID string) error
}

// approvalStore is *policy.Approvals or the server's (*client.Approvals).
type approvalStore interface {
	List(ctx context.Context, status string) ([]*policy.Approval, error)
	Approve(ctx context.Context, id, by, reason string) (*policy.Approval, error)
	Deny(ctx context.Context, id, by, reason string) (*policy.Approval, error)
}

// tokenStore is *auth.Tokens or the server's (*client.Tokens).
type tokenStore interface {
	CreateForAgent(ctx context.Context, name string, scopes []auth.Scope, ttl time.Duration, agentID string) (*auth.Token, string, error)
	List(ctx context.Context) ([]auth.Token, error)
	Revoke(ctx context.Context, id string) (*auth.Token, error)
}

// auditChain is the local chain (localAudit) or the server's
// (*client.Audit).
type auditChain interface {
	// List returns one page of the events f selects (f.Limit at most
	// auditPageSize).
	List(ctx context.Context, f chain.Filter) ([]chain.Event, error)
	// Verify verifies the chain and that every stored version has its
	// registration event.
	Verify(ctx context.Context) (*audit.VerifyResult, error)
}

// localAudit is the audit chain of a local database.
type localAudit struct {
	log *audit.Log
	st  registry.Store
}

func (a localAudit) List(ctx context.Context, f chain.Filter) ([]chain.Event, error) {
	return a.log.List(ctx, f)
}

func (a localAudit) Verify(ctx context.Context) (*audit.VerifyResult, error) {
	res, err := a.log.Verify(ctx)
	if err != nil {
		return nil, err
	}
	regs, err := a.log.CheckRegistrations(ctx, a.st)
	if err != nil {
		return nil, err
	}
	res.AddRegistrations(regs)
	return res, nil
}

// agentStore is what the agent commands need of the agents: the local
// database's (localAgents) or the server's (remoteAgents). Refusals come as
// they do locally: *agent.ManifestError from apply, *agent.ConfigError from
// Config and compose.
type agentStore interface {
	// apply applies the manifest m, read from the file path holding data,
	// and returns the agent with the warnings it has.
	apply(ctx context.Context, m *agent.Manifest, path string, data []byte) (*agent.Agent, []capability.Issue, error)
	Get(ctx context.Context, id string) (*agent.Agent, error)
	List(ctx context.Context) ([]*agent.Agent, error)
	Delete(ctx context.Context, id string) error
	Config(ctx context.Context, id string) (*agent.AgentConfig, error)
	// compose is the AgentConfig of ag; with a *agent.ConfigError, what
	// composes (Partial) when known.
	compose(ctx context.Context, ag *agent.Agent) (*agent.AgentConfig, error)
}

type localAgents struct{ *agent.Agents }

func (a localAgents) apply(ctx context.Context, m *agent.Manifest, _ string, _ []byte) (*agent.Agent, []capability.Issue, error) {
	return a.Apply(ctx, m)
}

func (a localAgents) compose(ctx context.Context, ag *agent.Agent) (*agent.AgentConfig, error) {
	return a.Compose(ctx, ag)
}

type remoteAgents struct{ *client.Agents }

// apply sends the file as it is, so that the lines and columns of the
// server's issues are the file's; they are named by its path.
func (a remoteAgents) apply(ctx context.Context, m *agent.Manifest, path string, data []byte) (*agent.Agent, []capability.Issue, error) {
	ag, err := a.ApplyManifest(ctx, m.Metadata.Name, data)
	var pe *client.ProblemError
	if errors.As(err, &pe) && pe.Status == http.StatusUnprocessableEntity && len(pe.Issues) > 0 {
		issues := slices.Clone(pe.Issues)
		for i := range issues {
			if issues[i].File != "" {
				issues[i].File = path
			}
		}
		return nil, nil, &agent.ManifestError{File: path, Agent: m.Metadata.Name, Issues: issues}
	}
	return ag, nil, err
}

func (a remoteAgents) Config(ctx context.Context, id string) (*agent.AgentConfig, error) {
	cfg, err := a.Agents.Config(ctx, id)
	return cfg, configErrorOf(ctx, a.Agents, id, err)
}

func (a remoteAgents) compose(ctx context.Context, ag *agent.Agent) (*agent.AgentConfig, error) {
	return a.Config(ctx, ag.ID)
}

// configErrorOf turns the server's refusal to compose agent id (422 whose
// issues name each capability at fault, see agent.ConfigError.Issues) back
// into a *agent.ConfigError, positions read from the agent; other errors
// pass through.
func configErrorOf(ctx context.Context, agents *client.Agents, id string, err error) error {
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != http.StatusUnprocessableEntity || len(pe.Issues) == 0 {
		return err
	}
	positions := map[string]int{}
	if ag, gerr := agents.Get(ctx, id); gerr == nil {
		for _, c := range ag.Capabilities {
			positions[c.CapabilityID] = c.Position
		}
	}
	ce := &agent.ConfigError{Agent: id}
	for _, iss := range pe.Issues {
		ce.Problems = append(ce.Problems, agent.Problem{CapabilityID: iss.Path, Position: positions[iss.Path], Code: strings.TrimPrefix(iss.Rule, agent.RuleConfig), Reason: iss.Message})
	}
	return ce
}
