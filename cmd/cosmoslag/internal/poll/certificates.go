package poll

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http/httptrace"
	"sync"
)

// certificateGuard keeps check and tune from retrying a request whose
// server certificate was refused: a retry meets the same certificate. The
// scaler's client retries a failed try whatever its cause unless the
// request's context has ended, so the guard ends that context, with the
// certificate error as its cause, as soon as a TLS handshake fails
// certificate verification (an httptrace hook on the context the command
// hands the scaler; the scaler's code is unchanged).
type certificateGuard struct {
	mu  sync.Mutex
	err error // the first certificate error
}

// guardCertificates returns ctx with the guard's hook; cancel releases it.
func guardCertificates(ctx context.Context) (context.Context, *certificateGuard, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	g := &certificateGuard{}
	trace := &httptrace.ClientTrace{TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
		if _, ok := errors.AsType[*tls.CertificateVerificationError](err); !ok {
			return
		}
		g.mu.Lock()
		if g.err == nil {
			g.err = err
		}
		g.mu.Unlock()
		cancel(err)
	}}
	return httptrace.WithClientTrace(ctx, trace), g, func() { cancel(nil) }
}

// failed returns the certificate error that ended the requests, or nil.
func (g *certificateGuard) failed() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// certificateHint says what was refused and how to fix it, for an
// estimate that failed on a certificate error: it was not retried.
func certificateHint(err error) string {
	const trust = "; not retried (a retry meets the same certificate). To trust it: for cosmoslag serve, start it with " +
		"--ca-file FILE and run this command with SSL_CERT_FILE=FILE in its environment; for another server, put the CA that " +
		"issued its certificate in the file SSL_CERT_FILE names (or in the system's trust store)"
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return "the server's certificate is signed by an authority this machine does not trust" + trust
	}
	if h, ok := errors.AsType[x509.HostnameError](err); ok {
		return "the server's certificate does not name " + h.Host + "; not retried (a retry meets the same certificate). Connect with a host name " +
			"it holds (cosmoslag serve's names the loopback addresses, localhost and its --addr host)"
	}
	return "the server's certificate was refused; not retried (a retry meets the same certificate). If it has expired, renew it " +
		"(cosmoslag serve with --cert-file: remove the files to have new ones written)"
}
