package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caphub/caphub/bench/internal/load"
	"github.com/caphub/caphub/capability"
	"github.com/caphub/caphub/store/storetest"
)

// writer makes the definitions of the write measurements: every other one
// a new capability (a loaded one's copy under a new name, version 1.0.0),
// the others a new version of a loaded capability (9.0.SEQ: above every
// loaded version, same schema, a new description). SEQ counts across the
// whole run, so no definition is made twice and no two clients write to the
// same capability at once.
type writer struct {
	run    string
	latest []capability.Definition
	seq    atomic.Int64
}

func newWriter(latest []capability.Definition) *writer {
	return &writer{run: strconv.FormatInt(time.Now().UnixNano()%1e9, 36), latest: latest}
}

// write is one definition to register, as caphub and as the reference
// see it.
type write struct {
	def     capability.Definition
	newName bool // a new capability, not a new version
}

// next returns the next definition to register.
func (w *writer) next() write {
	seq := w.seq.Add(1)
	tmpl := w.latest[int(seq*7919)%len(w.latest)]
	var d capability.Definition
	if seq%2 == 0 {
		d = storetest.Renamed(tmpl, fmt.Sprintf("%s_w%s_%d", tmpl.Name, w.run, seq), "1.0.0")
	} else {
		d = storetest.Renamed(tmpl, tmpl.Name, "9.0."+strconv.FormatInt(seq, 10))
		d.Description = fmt.Sprintf("%s Revision %d.", tmpl.Description, seq)
	}
	return write{def: d, newName: seq%2 == 0}
}

// body is the JSON document POST /registry/capabilities takes for d.
func body(d capability.Definition) ([]byte, error) {
	return json.Marshal(map[string]any{"capability": d})
}

// measureWrite registers from 1 and -clients clients, one definition a
// call, through each target's Service and over HTTP; the reference runs
// the official registry's publish transaction as often.
func (b *bench) measureWrite(round int) error {
	for _, n := range clientCounts(b.cfg.clients) {
		svcLabel := fmt.Sprintf("register one definition (Service.Register), %d concurrent client%s", n, plural(n))
		httpLabel := fmt.Sprintf("register one definition over HTTP (POST /registry/capabilities), %d concurrent client%s", n, plural(n))
		for _, t := range b.targets {
			b.tab.add(svcLabel, kLatency, t.col, round, latencyStat(load.Drive(n, b.cfg.duration, func(int) error {
				_, err := t.svc.Register(b.ctx, b.writes.next().def)
				return err
			})))
			res, err := b.postLoad(t.srv.Base, n)
			if err != nil {
				return err
			}
			b.tab.add(httpLabel, kLatency, t.col, round, latencyStat(res))
		}
		if b.ref != nil {
			res := load.Drive(n, b.cfg.duration, func(int) error { return b.ref.publish(b.ctx, b.writes.next()) })
			b.tab.add(svcLabel, kLatency, colRef, round, latencyStat(res))
			b.tab.add(httpLabel, kLatency, colRef, round, latencyStat(res))
		}
	}
	if b.ref != nil {
		b.tab.note("registration reference: the official registry's publish transaction (advisory lock on the name, remote-URL conflict check, version count, duplicate check, current latest, unmark latest, insert), its SQL replayed with pgx on a pool of -clients connections; the same sample serves the Service and HTTP rows.")
	}
	return nil
}

// postLoad registers new definitions over HTTP at base from n clients.
func (b *bench) postLoad(base string, n int) (load.Result, error) {
	var failed error
	var once sync.Once
	res := load.Run(n, b.cfg.duration, func(hc *http.Client, _ int) (*http.Response, error) {
		data, err := body(b.writes.next().def)
		if err != nil {
			once.Do(func() { failed = err })
			return nil, err
		}
		return hc.Post(base+"/registry/capabilities", "application/json", bytes.NewReader(data))
	})
	return res, failed
}

// noopBody invokes a built-in that does nothing but is audited like any
// call.
const noopBody = `{"uri": "ossa:everruns/noop@1.0", "input": {}}`

// measureReplicas (PostgreSQL): registrations over HTTP on replica A (the
// PostgreSQL target's server) alone, then while replica B, a second
// `caphub serve` on the same schema, serves a steady invocation load.
func (b *bench) measureReplicas(round int) error {
	var t *target
	for _, x := range b.targets {
		if x.col == colPG {
			t = x
		}
	}
	if t == nil {
		b.tab.note("replicas: skipped, it needs PostgreSQL (-postgres).")
		return nil
	}
	if b.replicaB == nil {
		s, err := b.serve(t, "serve-postgresql-replica-b")
		if err != nil {
			return err
		}
		if err := probeInvoke(s.Base); err != nil {
			return err
		}
		b.replicaB = s
	}
	alone := fmt.Sprintf("two replicas: registrations over HTTP on replica A alone (%d clients)", b.cfg.clients)
	res, err := b.postLoad(t.srv.Base, b.cfg.clients)
	if err != nil {
		return err
	}
	b.tab.add(alone, kLatency, colPG, round, latencyStat(res))

	loaded := fmt.Sprintf("two replicas: registrations on A while B serves invocations (%d clients)", b.cfg.invokeClients)
	invokes := make(chan load.Result, 1)
	go func() {
		invokes <- load.Run(b.cfg.invokeClients, b.cfg.duration+time.Second, func(hc *http.Client, _ int) (*http.Response, error) {
			return hc.Post(b.replicaB.Base+"/v1/invoke", "application/json", bytes.NewReader([]byte(noopBody)))
		})
	}()
	time.Sleep(500 * time.Millisecond) // B's load is steady before A's is timed
	res, err = b.postLoad(t.srv.Base, b.cfg.clients)
	inv := <-invokes
	if err != nil {
		return err
	}
	b.tab.add(loaded, kLatency, colPG, round, latencyStat(res)).base = alone
	b.tab.add("two replicas: invocations on B (POST /v1/invoke of ossa:everruns/noop, audited) meanwhile", kLatency, colPG, round, latencyStat(inv))
	return nil
}

// probeInvoke checks that the server invokes the noop built-in.
func probeInvoke(base string) error {
	resp, err := http.Post(base+"/v1/invoke", "application/json", bytes.NewReader([]byte(noopBody)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var p struct{ Detail string }
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return fmt.Errorf("replica B does not invoke ossa:everruns/noop@1.0: %s %s", resp.Status, p.Detail)
	}
	return nil
}
