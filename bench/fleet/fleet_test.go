package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/entraidtest"
)

// countedServer serves next as the account process does, with a
// certificate from a test CA, and returns a function making a client that
// trusts it and opens its own connections.
func countedServer(t *testing.T, next http.Handler, budget float64) (string, *counters, func() *http.Client) {
	t.Helper()
	ca, cert := testCA(t)
	served, c, closeFn, err := serveCounted(next, "http://own.example/", cert, ca.Certificate, budget)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CAPEM())
	newClient := func() *http.Client {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	return served, c, newClient
}

// The peaks are the connections and requests open at once: k clients of
// their own, each with one request held until all k have arrived.
func TestCountsPeakConnectionsAndRequestsInFlight(t *testing.T) {
	const k = 7
	var arrived sync.WaitGroup
	arrived.Add(k)
	release := make(chan struct{})
	var held sync.Mutex
	holding := 0
	served, c, newClient := countedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held.Lock()
		hold := holding < k
		holding++
		held.Unlock()
		if hold {
			arrived.Done()
			<-release
		}
	}), 0)
	var done sync.WaitGroup
	for range k {
		client := newClient()
		done.Add(1)
		go func() {
			defer done.Done()
			resp, err := client.Get(served + "dbs")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	arrived.Wait()
	c.mu.Lock()
	open, inFlight := c.open, c.inFlight
	c.mu.Unlock()
	close(release)
	done.Wait()
	// A new client's connection adds one to the k kept alive; its next
	// requests on that connection add none.
	client := newClient()
	for i := range 3 {
		resp, err := client.Get(served + "dbs")
		if err != nil {
			t.Fatal(i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if open < k || inFlight != k || c.peak != k+1 || c.inFlightPeak != k || c.accepted != k+1 || c.requests != k+3 {
		t.Fatalf("open %d, in flight %d, peaks %d and %d, accepted %d, requests %d; want %d, %d, %d and %d, %d, %d",
			open, inFlight, c.peak, c.inFlightPeak, c.accepted, c.requests, k, k, k+1, k, k+1, k+3)
	}
}

// Beyond its budget the account answers 429 with x-ms-retry-after-ms, as
// Cosmos DB throttles, and the request does not reach the account.
func TestThrottlesBeyondTheBudget(t *testing.T) {
	reached := 0
	var mu sync.Mutex
	served, c, newClient := countedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached++
		mu.Unlock()
	}), 5)
	client := newClient()
	throttled := 0
	start := time.Now()
	for range 20 {
		resp, err := client.Get(served + "dbs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			throttled++
			if ms, err := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms")); err != nil || ms <= 0 {
				t.Fatalf("x-ms-retry-after-ms %q", resp.Header.Get("x-ms-retry-after-ms"))
			}
		}
	}
	allowed := 5 + int(time.Since(start).Seconds()*5) + 1
	mu.Lock()
	defer mu.Unlock()
	if reached > allowed || throttled != 20-reached || c.throttled != int64(throttled) {
		t.Fatalf("%d reached the account (budget allows %d), %d throttled, %d counted", reached, allowed, throttled, c.throttled)
	}
}

// The account read names the counted listener as the account's location.
func TestAccountReadNamesTheCountedListener(t *testing.T) {
	served, _, newClient := countedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"readableLocations":[{"databaseAccountEndpoint":"http://own.example/"}]}`)
	}), 0)
	resp, err := newClient().Get(served)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if want := `{"readableLocations":[{"databaseAccountEndpoint":"` + served + `"}]}`; string(body) != want {
		t.Fatalf("account read %s, want %s", body, want)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct{ q, want float64 }{{0.5, 5}, {0.99, 10}, {1, 10}, {0.1, 1}, {0.95, 10}, {0.9, 9}} {
		if got := quantile(xs, tc.q); got != tc.want {
			t.Errorf("quantile %.2f = %g, want %g", tc.q, got, tc.want)
		}
	}
}

// A request the account aborts (its client went away) leaves the count.
func TestAbortedRequestLeavesTheCount(t *testing.T) {
	served, c, newClient := countedServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler)
	}), 0)
	if _, err := newClient().Get(served + "dbs"); err == nil {
		t.Fatal("the aborted request was answered")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		inFlight := c.inFlight
		c.mu.Unlock()
		if inFlight == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still counted in flight", inFlight)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The account under workloadHost is reached through the harness's CONNECT
// proxy, TLS end to end, each tunnel one counted connection.
func TestWorkloadHostTunnelsToTheCountedListener(t *testing.T) {
	ca, cert := testCA(t)
	served, c, closeFn, err := serveCounted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Host)
	}), "http://own.example/", cert, ca.Certificate, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	proxy, err := serveTunnels(strings.TrimSuffix(strings.TrimPrefix(served, "https://"), "/"), "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	proxyURL, _ := url.Parse(proxy)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CAPEM())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Proxy: http.ProxyURL(proxyURL)}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	for range 2 {
		resp, err := client.Get("https://" + workloadHost + "/dbs")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != workloadHost {
			t.Fatalf("answered for %q, want %q", body, workloadHost)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.accepted != 1 || c.requests != 2 {
		t.Fatalf("accepted %d connections and %d requests; want 1 and 2", c.accepted, c.requests)
	}
}

// testCA is a test CA of the Entra ID test issuer, closed with the test,
// and a certificate it signed.
func testCA(t *testing.T) (*entraidtest.Issuer, *tls.Certificate) {
	t.Helper()
	ca, err := entraidtest.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ca.Close)
	cert, err := ca.Certificate("")
	if err != nil {
		t.Fatal(err)
	}
	return ca, cert
}
