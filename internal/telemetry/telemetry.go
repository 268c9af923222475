// Package telemetry builds the OpenTelemetry tracer provider of a civicgate process (recordsd, the webhooks
// app) from the standard OTEL_* environment, and the pgx tracer that turns SQL statements into spans.
//
// Tracing is off unless switched on: CIVICGATE_TRACING=on turns it on for every civicgate process, and
// <SERVICE>_TRACING=on (the service name upper-cased, '-' and '.' as '_', e.g. RECORDSD_TRACING) for one.
// Off, Setup returns a no-op provider and the instrumentation in this repository checks Enabled so a request
// pays nothing. On, everything else is the OpenTelemetry SDK's own environment: OTEL_EXPORTER_OTLP_*,
// OTEL_TRACES_EXPORTER, OTEL_TRACES_SAMPLER(_ARG), OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_PROPAGATORS, OTEL_BSP_*.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// SwitchAll is the environment variable that turns tracing on for every civicgate process.
const SwitchAll = "CIVICGATE_TRACING"

// Switch is the environment variable that turns tracing on for service alone (e.g. RECORDSD_TRACING).
func Switch(service string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r == ' ' {
			return '_'
		}
		return r
	}, strings.ToUpper(service)) + "_TRACING"
}

// On reports whether tracing is switched on for service. A switch set to anything but "on", "off" or
// nothing is an error, so a typo does not silently leave tracing off.
func On(service string) (bool, error) {
	on := false
	for _, name := range []string{SwitchAll, Switch(service)} {
		switch v := strings.ToLower(strings.TrimSpace(os.Getenv(name))); v {
		case "", "off":
		case "on":
			on = true
		default:
			return false, fmt.Errorf("%s=%q: must be on or off", name, v)
		}
	}
	return on, nil
}

// Setup returns service's tracer provider and the function that flushes and stops it (call it once, at exit,
// with a deadline). Off (see On), the provider is a no-op one and shutdown does nothing. On, spans go through a
// batch processor to the exporter OTEL_TRACES_EXPORTER names (default otlp, protocol from
// OTEL_EXPORTER_OTLP_PROTOCOL, default http/protobuf), sampled by OTEL_TRACES_SAMPLER (default
// parentbased_always_on), under a resource whose service.name is service unless OTEL_SERVICE_NAME says
// otherwise; the OTEL_PROPAGATORS propagator (default W3C tracecontext + baggage) becomes the global one.
func Setup(ctx context.Context, service string) (trace.TracerProvider, func(context.Context) error, error) {
	on, err := On(service)
	if err != nil {
		return nil, nil, err
	}
	if !on {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("telemetry: span exporter: %w", err)
	}
	// resource.Default + the environment (OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME) win over our default name.
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(attribute.String("service.name", service)))
	if err == nil {
		var env *resource.Resource
		env, err = resource.New(ctx, resource.WithFromEnv())
		if err == nil {
			res, err = resource.Merge(res, env)
		}
	}
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		_ = exp.Shutdown(ctx)
		return nil, nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTextMapPropagator(autoprop.NewTextMapPropagator())
	return tp, tp.Shutdown, nil
}

// Enabled reports whether tp can record anything: false for nil and for the no-op providers, so
// instrumentation can skip its work entirely when tracing is off.
func Enabled(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}
