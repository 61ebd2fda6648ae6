// Package connectproxy is an HTTP CONNECT proxy for tests that terminates
// TLS for any host name and answers every tunnelled request with one
// handler. With entraidtest it serves the test issuer as
// login.microsoftonline.com, where MSAL sends instance discovery for custom
// authorities and where the public-cloud authority lives.
//
// Client sends non-loopback hosts through the proxy; processes that rely on
// the environment can set HTTPS_PROXY to URL and SSL_CERT_FILE to the CA the
// certificates come from, both before their first TLS connection (Go reads
// them once). Loopback addresses are never proxied.
package connectproxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"time"
)

// Proxy is a running proxy. All methods are safe for concurrent use.
type Proxy struct {
	handler     http.Handler
	certificate func(host string) (*tls.Certificate, error)
	http        *httptest.Server
	client      *http.Client

	tunnelsDone sync.WaitGroup
	mu          sync.Mutex
	closed      bool
	tunnels     map[net.Conn]bool
}

// New starts a proxy on 127.0.0.1. Tunnelled TLS connections get the
// certificate certificate returns for the requested host; Client trusts
// roots.
func New(handler http.Handler, certificate func(host string) (*tls.Certificate, error), roots *x509.CertPool) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("connectproxy: listen: %w", err)
	}
	p := &Proxy{handler: handler, certificate: certificate, tunnels: map[net.Conn]bool{}}
	p.http = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(p.serveConnect), ReadHeaderTimeout: time.Minute}}
	p.http.Start()
	proxyURL, _ := url.Parse(p.http.URL)
	p.client = &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		Proxy: func(r *http.Request) (*url.URL, error) {
			if isLoopback(r.URL.Hostname()) {
				return nil, nil
			}
			return proxyURL, nil
		},
	}}
	return p, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the proxy's address, "http://127.0.0.1:port".
func (p *Proxy) URL() string { return p.http.URL }

// Client trusts the roots given to New and sends non-loopback hosts through
// the proxy; pass it as azcore.ClientOptions.Transport.
func (p *Proxy) Client() *http.Client { return p.client }

// Close stops the proxy, ends open tunnels and waits for them.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.tunnels {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.http.Close()
	p.tunnelsDone.Wait()
	p.client.CloseIdleConnections()
}

// serveConnect answers CONNECT by terminating TLS for the requested host
// and serving the handler over the tunnel.
func (p *Proxy) serveConnect(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "this proxy only supports CONNECT", http.StatusMethodNotAllowed)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.closed { // Close already swept the tunnels; don't outlive it
		p.mu.Unlock()
		_ = conn.Close()
		return
	}
	p.tunnels[conn] = true
	p.tunnelsDone.Add(1)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.tunnels, conn)
		p.mu.Unlock()
		_ = conn.Close()
		p.tunnelsDone.Done()
	}()
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	host := r.URL.Hostname()
	tlsConn := tls.Server(conn, &tls.Config{
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			if hello.ServerName != "" {
				return p.certificate(hello.ServerName)
			}
			return p.certificate(host)
		},
	})
	br := bufio.NewReader(tlsConn)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		rw := &bufferedResponse{header: http.Header{}}
		p.handler.ServeHTTP(rw, req)
		_ = req.Body.Close()
		if rw.hijacked {
			return
		}
		if err := rw.writeTo(tlsConn, req); err != nil {
			return
		}
	}
}

// bufferedResponse is an http.ResponseWriter for requests read off a
// tunnel; it is written out as one HTTP/1.1 response.
type bufferedResponse struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}

// Hijack lets a dropped-connection fault end the tunnel.
func (b *bufferedResponse) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	b.hijacked = true
	return nopConn{}, nil, nil
}

func (b *bufferedResponse) writeTo(w io.Writer, req *http.Request) error {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	resp := &http.Response{
		StatusCode:    b.status,
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        b.header,
		Body:          io.NopCloser(bytes.NewReader(b.body.Bytes())),
		ContentLength: int64(b.body.Len()),
		Request:       req,
	}
	return resp.Write(w)
}

// nopConn is what a tunnelled "hijack" hands out; closing it is a no-op
// because the tunnel loop closes the real connection.
type nopConn struct{ net.Conn }

func (nopConn) Close() error { return nil }
