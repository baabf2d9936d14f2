package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/caphub/caphub/internal/tracing"
)

// tracingOn reports whether the standard OpenTelemetry variables ask for
// traces: an OTLP endpoint is named, or OTEL_TRACES_EXPORTER=otlp; never
// with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. caphub exports
// over OTLP/HTTP only: another exporter or protocol is refused, naming the
// variable, rather than silently ignored.
func tracingOn() (bool, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	exporter := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	switch exporter {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, &usageError{fmt.Errorf("OTEL_TRACES_EXPORTER=%s: caphub exports traces with otlp only (over HTTP); set otlp, or none to turn traces off", exporter)}
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" {
			if p != "http/protobuf" {
				return false, &usageError{fmt.Errorf("%s=%s: caphub exports traces over OTLP/HTTP with protobuf only; set http/protobuf (the collector's port 4318), or unset it", v, p)}
			}
			break // the traces' own variable wins
		}
	}
	return exporter == "otlp" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// startTracing turns traces on when the OTEL_* variables ask for them (see
// tracingOn) and returns what flushes them at exit; off, it is a no-op.
func startTracing(ctx context.Context, log *slog.Logger) (stop func(), err error) {
	on, err := tracingOn()
	if err != nil || !on {
		return func() {}, err
	}
	shutdown, err := tracing.Setup(ctx, tracing.Options{Version: buildVersion(), Log: log})
	if err != nil {
		return nil, err
	}
	log.Info("OpenTelemetry traces on", "exporter", "otlp/http", "endpoint", redactURL(otlpEndpoint()))
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("traces not all exported", "err", err)
		}
	}, nil
}

// otlpEndpoint is where spans go, for the log line (the exporter reads
// the same variables).
func otlpEndpoint() string {
	if e := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); e != "" {
		return e
	}
	if e := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		return strings.TrimSuffix(e, "/") + "/v1/traces"
	}
	return "http://localhost:4318/v1/traces"
}
