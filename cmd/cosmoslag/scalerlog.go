package main

import (
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The scaler logs through controller-runtime's global logger, as every KEDA
// scaler does. cosmoslag installs a sink that hands each record to whoever
// listens, so the demo can show the scaler's own per-poll figures (total
// lag, active partitions, request charge) and its split notices without a
// second estimate.

// logRecord is one structured log call of the scaler.
type logRecord struct {
	Level  int            // logr verbosity; -1 for errors
	Name   string         // logger name, e.g. "azure_cosmosdb_scaler"
	Msg    string         //
	Values map[string]any // key/value pairs, the logger's own included
	Err    error
}

// int64Value returns an integer value of the record, or 0.
func (r logRecord) int64Value(key string) int64 {
	switch v := r.Values[key].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case int32:
		return int64(v)
	}
	return 0
}

func (r logRecord) float64Value(key string) float64 {
	switch v := r.Values[key].(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case int:
		return float64(v)
	}
	return 0
}

func (r logRecord) stringValue(key string) string {
	if v, ok := r.Values[key]; ok {
		return fmt.Sprint(v)
	}
	return ""
}

type logHub struct {
	mu   sync.Mutex
	next int
	subs map[int]func(logRecord)
}

var (
	scalerLogs     = &logHub{subs: map[int]func(logRecord){}}
	installLogOnce sync.Once
)

// installScalerLogSink routes controller-runtime's logger to scalerLogs.
// Without it controller-runtime would also complain, after 30 s, that no
// logger was ever set.
func installScalerLogSink() {
	installLogOnce.Do(func() { logf.SetLogger(logr.New(&hubSink{hub: scalerLogs})) })
}

// subscribe calls f for every record until the returned cancel is called.
// f runs on the logging goroutine and must not block.
func (h *logHub) subscribe(f func(logRecord)) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.subs[id] = f
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, id)
	}
}

func (h *logHub) publish(r logRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.subs {
		f(r)
	}
}

// hubSink is a logr.LogSink publishing to a logHub; verbosity 0 and 1 only.
type hubSink struct {
	hub    *logHub
	name   string
	values []any
}

func (s *hubSink) Init(logr.RuntimeInfo) {}

func (s *hubSink) Enabled(level int) bool { return level <= 1 }

func (s *hubSink) Info(level int, msg string, kv ...any) {
	s.hub.publish(s.record(level, msg, nil, kv))
}

func (s *hubSink) Error(err error, msg string, kv ...any) {
	s.hub.publish(s.record(-1, msg, err, kv))
}

func (s *hubSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(append([]any{}, s.values...), kv...)
	return &c
}

func (s *hubSink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "." + name
	}
	c.name = name
	return &c
}

func (s *hubSink) record(level int, msg string, err error, kv []any) logRecord {
	r := logRecord{Level: level, Name: s.name, Msg: msg, Err: err, Values: map[string]any{}}
	for _, list := range [][]any{s.values, kv} {
		for i := 0; i+1 < len(list); i += 2 {
			r.Values[fmt.Sprint(list[i])] = list[i+1]
		}
	}
	return r
}
