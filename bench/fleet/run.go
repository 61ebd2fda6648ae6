package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// fleetConfig is one fleet size: N ScaledObjects of L leases each.
type fleetConfig struct{ N, L int }

func parseConfigs(s string) ([]fleetConfig, error) {
	var out []fleetConfig
	for _, f := range strings.Split(s, ",") {
		n, l, ok := strings.Cut(strings.TrimSpace(f), "x")
		if !ok {
			return nil, fmt.Errorf("fleet size %q: want NxL", f)
		}
		ni, err1 := strconv.Atoi(n)
		li, err2 := strconv.Atoi(l)
		if err1 != nil || err2 != nil || ni < 1 || li < 1 {
			return nil, fmt.Errorf("fleet size %q: want NxL", f)
		}
		out = append(out, fleetConfig{ni, li})
	}
	return out, nil
}

// runAll is `fleet run`: per fleet size one account process, then the
// fleet processes, interleaved: for each repetition and shape, each
// implementation once, the order alternating between repetitions.
func runAll(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	configs := fs.String("sizes", "1x100,10x100,100x100,500x100,1000x100,100x1000", "fleet sizes NxL: N ScaledObjects of L leases")
	impls := fs.String("impls", "ours,keda-v2.21.0", "implementations; LABEL=PATH is another build's fleet binary polling with its own \"ours\" (a before/after comparison in one run)")
	shapes := fs.String("shapes", "steady,restart", "steady, restart")
	auth := fs.String("auth", "key", "key or workload")
	reps := fs.Int("reps", 2, "repetitions of each (size, shape, implementation)")
	speed := fs.Float64("speed", 6, "time compression: pollingInterval 30s/speed, HPA period 15s/speed")
	periods := fs.Float64("periods", 2, "the measured window, in polling intervals (after one polling interval of warm-up for steady)")
	latency := fs.Duration("latency", 2*time.Millisecond, "the account's added latency per request")
	throttle := fs.Float64("throttle", 0, "the account's request budget per second (0 = unlimited)")
	maxConns := fs.Int("max-conns-per-host", 0, "MaxConnsPerHost on KEDA's shared transport in every fleet process (0: none, as v2.21.0)")
	out := fs.String("out", "", "append each result as a JSON line to this file")
	plot := fs.String("plot", "", "write the SVG plot of p99 latency and peak connections against N (L = 100) here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes, err := parseConfigs(*configs)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	pi := time.Duration(float64(30*time.Second) / *speed)
	hpa := time.Duration(float64(15*time.Second) / *speed)
	window := time.Duration(float64(pi) * *periods)
	fmt.Fprintf(os.Stderr, "fleet: pollingInterval %v, HPA period %v (30 s and 15 s compressed %gx), window %v, latency %v, auth %s, throttle %g/s, %d reps; load %s\n",
		pi, hpa, *speed, window, *latency, *auth, *throttle, *reps, loadAverage())
	var outFile io.Writer
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		outFile = f
	}
	began := time.Now()
	var results []clientResult
	for _, size := range sizes {
		srv, ready, err := startServer(self, size, *latency, *throttle, *auth == "workload")
		if err != nil {
			return err
		}
		implList := strings.Split(*impls, ",")
		for rep := range *reps {
			for _, shape := range strings.Split(*shapes, ",") {
				order := implList
				if rep%2 == 1 {
					order = []string{implList[len(implList)-1]}
					order = append(order, implList[:len(implList)-1]...)
				}
				for _, impl := range order {
					r, err := runFleet(self, ready, impl, shape, *auth, size, pi, hpa, window, *maxConns)
					if err != nil {
						fmt.Fprintf(os.Stderr, "fleet: %dx%d %s %s: %v\n", size.N, size.L, shape, impl, err)
						continue
					}
					fmt.Fprintln(os.Stderr, summaryLine(r))
					results = append(results, r)
					if outFile != nil {
						b, _ := json.Marshal(r)
						fmt.Fprintln(outFile, string(b))
					}
				}
			}
		}
		srv.stop()
	}
	fmt.Print(markdown(results))
	fmt.Fprintf(os.Stderr, "fleet: done in %v; load %s\n", time.Since(began).Round(time.Second), loadAverage())
	if *plot != "" {
		return os.WriteFile(*plot, []byte(svgPlot(results)), 0o644)
	}
	return nil
}

type serverProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func (s *serverProc) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

func startServer(self string, size fleetConfig, latency time.Duration, throttle float64, workload bool) (*serverProc, serverReady, error) {
	cmd := exec.Command(self, "server", "-n", strconv.Itoa(size.N), "-leases", strconv.Itoa(size.L),
		"-latency", latency.String(), "-throttle", strconv.FormatFloat(throttle, 'f', -1, 64), "-workload="+strconv.FormatBool(workload))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, serverReady{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, serverReady{}, err
	}
	if err := cmd.Start(); err != nil {
		return nil, serverReady{}, err
	}
	p := &serverProc{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		p.stop()
		return nil, serverReady{}, fmt.Errorf("account process: %w", err)
	}
	var ready serverReady
	if err := json.Unmarshal(line, &ready); err != nil {
		p.stop()
		return nil, serverReady{}, fmt.Errorf("account process: %w", err)
	}
	return p, ready, nil
}

func runFleet(self string, ready serverReady, impl, shape, auth string, size fleetConfig, pi, hpa, window time.Duration, maxConns int) (clientResult, error) {
	label, binary := impl, self
	if l, path, ok := strings.Cut(impl, "="); ok {
		label, binary, impl = l, path, "ours"
	}
	endpoint := ready.Endpoint
	if auth == "workload" && ready.WorkloadEndpoint != "" {
		endpoint = ready.WorkloadEndpoint
	}
	cmd := exec.Command(binary, "client", "-impl", impl, "-shape", shape, "-auth", auth,
		"-n", strconv.Itoa(size.N), "-leases", strconv.Itoa(size.L),
		"-endpoint", endpoint, "-key", ready.Key, "-control", ready.Control,
		"-polling-interval", pi.String(), "-hpa-period", hpa.String(), "-window", window.String())
	if maxConns > 0 { // a flag builds before it do not know
		cmd.Args = append(cmd.Args, "-max-conns-per-host", strconv.Itoa(maxConns))
	}
	env := append(os.Environ(), "SSL_CERT_FILE="+ready.CAFile, "HTTPS_PROXY="+ready.HTTPSProxy, "NO_PROXY=", "no_proxy=")
	if auth == "workload" {
		dir, err := os.MkdirTemp("", "fleet")
		if err != nil {
			return clientResult{}, err
		}
		defer os.RemoveAll(dir)
		tokenFile := filepath.Join(dir, "token")
		if err := os.WriteFile(tokenFile, []byte("federated-service-account-token"), 0o600); err != nil {
			return clientResult{}, err
		}
		env = append(env, "AZURE_AUTHORITY_HOST="+ready.Issuer, "AZURE_TENANT_ID=72f988bf-86f1-41af-91ab-2d7cd011db47",
			"AZURE_CLIENT_ID=keda-operator", "AZURE_FEDERATED_TOKEN_FILE="+tokenFile)
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return clientResult{}, fmt.Errorf("%w: %s", err, lastLines(stderr.String(), 5))
	}
	var r clientResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return clientResult{}, fmt.Errorf("result: %w: %s", err, lastLines(stdout.String(), 3))
	}
	r.Impl = label
	return r, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func summaryLine(r clientResult) string {
	return fmt.Sprintf("%5dx%-5d %-8s %-13s polls %5d/%5d failed %4d p50 %7.1f ms p99 %7.1f ms conns %5d inflight %5d 429 %5d heap/SO idle %6.1f KiB goroutines/SO idle %.2f cpu/poll %.2f ms load %s",
		r.N, r.Leases, r.Shape, r.Impl, r.Polls, r.OfferedPolls, r.Failed, r.P50, r.P99, r.ConnsPeak, r.InFlightPeak, r.Throttled,
		r.HeapPerSOIdle/1024, r.GoroutinesPerSOIdle, r.CPUPerPollMs, r.LoadAvg)
}
