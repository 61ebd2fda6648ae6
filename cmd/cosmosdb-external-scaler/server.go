package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// serverOptions configure the external scaler service.
type serverOptions struct {
	httpTimeout    time.Duration // ScalerConfig.GlobalHTTPTimeout: bounds each Cosmos DB request try
	streamInterval time.Duration // StreamIsActive: time between two pushes
	resultMaxAge   time.Duration // reuse an estimate this young (0: never)
	idleTimeout    time.Duration // close a scaler unused for this long (0: never)
	logger         *slog.Logger
	metrics        *serverMetrics // set by newServer; nil records nothing
	// allowedEndpoints limits endpoint/leaseEndpoint; the zero value (tests)
	// allows the defaults.
	allowedEndpoints endpointAllowList

	// Seams for tests; main uses os.LookupEnv and the in-tree constructor.
	lookupEnv func(string) (string, bool)
	newScaler func(*scalersconfig.ScalerConfig) (cosmosScaler, triggerInfo, error)
}

// server implements KEDA's externalscaler.ExternalScaler on top of the
// in-tree azure-cosmosdb scaler. StreamMetricSpec stays unimplemented:
// the metric spec only changes with the metadata, and KEDA falls back to
// GetMetricSpec when a scaler answers Unimplemented.
type server struct {
	pb.UnimplementedExternalScalerServer

	opts    serverOptions
	log     *slog.Logger
	reg     *registry
	metrics *serverMetrics
	health  *health.Server
	grpc    *grpc.Server

	stopping chan struct{} // closed when shutdown starts: ends every stream
	stopOnce sync.Once
}

const serviceName = "externalscaler.ExternalScaler"

func newServer(o serverOptions, creds credentials.TransportCredentials) *server {
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.lookupEnv == nil {
		o.lookupEnv = os.LookupEnv
	}
	if o.newScaler == nil {
		o.newScaler = newCosmosScaler
	}
	s := &server{opts: o, log: o.logger, health: health.NewServer(), stopping: make(chan struct{})}
	o.metrics = newServerMetrics(func() int { return s.reg.size() })
	s.metrics = o.metrics
	s.reg = newRegistry(o.logger, o.idleTimeout, func(ref *pb.ScaledObjectRef, key instanceKey) (*instance, error) {
		return newInstance(ref, key, o)
	})
	grpcOpts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.logUnary),
		grpc.ChainStreamInterceptor(s.logStream),
	}
	if creds != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(creds))
	}
	s.grpc = grpc.NewServer(grpcOpts...)
	pb.RegisterExternalScalerServer(s.grpc, s)
	healthpb.RegisterHealthServer(s.grpc, s.healthService())
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(serviceName, healthpb.HealthCheckResponse_SERVING)
	return s
}

// healthService is the health server, with Watch streams ended at
// shutdown so that they do not hold up the graceful stop.
func (s *server) healthService() healthpb.HealthServer {
	return &stoppableHealth{Server: s.health, stopping: s.stopping}
}

type stoppableHealth struct {
	*health.Server
	stopping <-chan struct{}
}

func (h *stoppableHealth) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	go func() {
		select {
		case <-h.stopping:
			// Let the NOT_SERVING update go out before the stream ends.
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			cancel()
		case <-ctx.Done():
		}
	}()
	err := h.Server.Watch(req, &contextStream{Health_WatchServer: stream, ctx: ctx})
	select {
	case <-h.stopping:
		return nil // a clean end of stream
	default:
		return err
	}
}

type contextStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (c *contextStream) Context() context.Context { return c.ctx }

// serve accepts connections on ln until shutdown.
func (s *server) serve(ln net.Listener) error { return s.grpc.Serve(ln) }

// shutdown reports NOT_SERVING, ends every stream (the client sees a clean
// end of stream and, for KEDA, reconnects), waits for calls in flight until
// ctx is done, then closes every scaler.
func (s *server) shutdown(ctx context.Context) {
	s.stopOnce.Do(func() {
		s.health.Shutdown()
		close(s.stopping)
		done := make(chan struct{})
		go func() {
			s.grpc.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-ctx.Done():
			s.log.Warn("calls still running at the shutdown deadline; closing their connections")
			s.grpc.Stop()
			<-done
		}
		s.reg.closeAll()
	})
}

// GetMetricSpec returns the metric name (without KEDA's "s<index>-"
// prefix, which KEDA adds and later strips itself) and the lag threshold.
func (s *server) GetMetricSpec(_ context.Context, ref *pb.ScaledObjectRef) (*pb.GetMetricSpecResponse, error) {
	in, release, err := s.reg.acquire(ref)
	if err != nil {
		return nil, err
	}
	defer release()
	return &pb.GetMetricSpecResponse{MetricSpecs: []*pb.MetricSpec{{
		MetricName:      in.metricName,
		TargetSize:      in.target,
		TargetSizeFloat: float64(in.target),
	}}}, nil
}

// GetMetrics estimates the lag. KEDA sends the name GetMetricSpec returned.
func (s *server) GetMetrics(ctx context.Context, req *pb.GetMetricsRequest) (*pb.GetMetricsResponse, error) {
	in, release, err := s.reg.acquire(req.GetScaledObjectRef())
	if err != nil {
		return nil, err
	}
	defer release()
	if req.MetricName != in.metricName {
		return nil, status.Errorf(codes.NotFound, "metric %q is not served for this trigger; GetMetricSpec returned %q", excerpt.Of(req.MetricName), excerpt.Of(in.metricName))
	}
	e, err := in.servedResult(ctx, s.opts.resultMaxAge)
	if err != nil {
		return nil, estimateStatus(ctx, err, in.secrets)
	}
	return &pb.GetMetricsResponse{MetricValues: []*pb.MetricValue{{
		MetricName:       in.metricName,
		MetricValue:      e.value,
		MetricValueFloat: e.valueFloat,
	}}}, nil
}

// IsActive reports whether the total lag exceeds the activation threshold.
func (s *server) IsActive(ctx context.Context, ref *pb.ScaledObjectRef) (*pb.IsActiveResponse, error) {
	in, release, err := s.reg.acquire(ref)
	if err != nil {
		return nil, err
	}
	defer release()
	e, err := in.servedResult(ctx, s.opts.resultMaxAge)
	if err != nil {
		return nil, estimateStatus(ctx, err, in.secrets)
	}
	return &pb.IsActiveResponse{Result: e.active}, nil
}

// StreamIsActive (used by KEDA for type external-push) sends the activity
// now and then every streamInterval, until the client ends the stream or
// the server shuts down. A failed estimate is logged and skipped: the
// stream stays open and the next tick tries again.
func (s *server) StreamIsActive(ref *pb.ScaledObjectRef, stream grpc.ServerStreamingServer[pb.IsActiveResponse]) error {
	in, release, err := s.reg.acquire(ref)
	if err != nil {
		return err
	}
	defer release()
	ctx := stream.Context()
	ticker := time.NewTicker(s.opts.streamInterval)
	defer ticker.Stop()
	for {
		e, err := in.servedResult(ctx, s.opts.resultMaxAge)
		switch {
		case ctx.Err() != nil:
			return status.FromContextError(ctx.Err()).Err()
		case err != nil:
			s.log.Warn("stream: estimate failed; trying again at the next interval",
				"namespace", ref.Namespace, "name", ref.Name, "error", in.secrets.Redact(err.Error()))
		default:
			if err := stream.Send(&pb.IsActiveResponse{Result: e.active}); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.stopping:
			return nil
		case <-ticker.C:
		}
	}
}

// logUnary logs every call: failures at warning level (their messages
// never carry secrets), successes at debug level. Metadata is never
// logged: KEDA may put resolved secrets in it.
func (s *server) logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	s.logCall(ctx, info.FullMethod, refOf(req), start, err, true)
	return resp, err
}

func (s *server) logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	w := &refCapturingStream{ServerStream: ss}
	err := handler(srv, w)
	s.logCall(ss.Context(), info.FullMethod, w.ref, start, err, false)
	return err
}

// logCall logs a finished call and counts it in the metrics.
func (s *server) logCall(ctx context.Context, method string, ref *pb.ScaledObjectRef, start time.Time, err error, unary bool) {
	code, duration := status.Code(err), time.Since(start)
	s.metrics.observeCall(method, code, duration, unary)
	attrs := []any{"method", method, "namespace", excerpt.Of(ref.GetNamespace()), "name", excerpt.Of(ref.GetName()),
		"code", code.String(), "duration", duration.Round(time.Microsecond).String()}
	switch code {
	case codes.OK, codes.Canceled:
		s.log.DebugContext(ctx, "call", attrs...)
	default:
		s.log.WarnContext(ctx, "call failed", append(attrs, "error", status.Convert(err).Message())...)
	}
}

func refOf(req any) *pb.ScaledObjectRef {
	switch r := req.(type) {
	case *pb.ScaledObjectRef:
		return r
	case *pb.GetMetricsRequest:
		return r.GetScaledObjectRef()
	}
	return nil
}

// refCapturingStream remembers the request of a server-streaming call.
type refCapturingStream struct {
	grpc.ServerStream
	ref *pb.ScaledObjectRef
}

func (w *refCapturingStream) RecvMsg(m any) error {
	err := w.ServerStream.RecvMsg(m)
	if r, ok := m.(*pb.ScaledObjectRef); ok && err == nil {
		w.ref = r
	}
	return err
}
