// Command image builds the cosmosdb-external-scaler container image without
// a container engine, with go-containerregistry: one static binary per
// platform (CGO_ENABLED=0, cross-compiled by the Go toolchain), a CA bundle
// at /etc/ssl/certs/ca-certificates.crt, /etc/passwd and /etc/group naming
// the non-root user 65532, the entrypoint set. The same image as
// deploy/external-scaler.Dockerfile builds.
//
//	go run . -repo ../.. -output ../../bin/cosmosdb-external-scaler-image.tar
//	go run . -repo ../.. -push ghcr.io/kedacore/cosmosdb-external-scaler:v0.2.0
//
// -output writes an OCI image layout as a tar file (an "oci-archive": one
// image index with a manifest per platform, tagged by -tag); -push sends the
// same index to a registry with the credentials of ~/.docker/config.json.
// It is its own module so that the scaler's module does not depend on
// go-containerregistry; `make image` and `make image-push` run it.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	command    = "cosmosdb-external-scaler"
	modulePath = "github.com/kedacore/keda-cosmosdb-scaler"
	uid        = 65532 // distroless' nonroot
)

type options struct {
	repo       string
	platforms  string
	output     string
	push       string
	tag        string
	version    string
	commit     string
	caBundle   string
	created    time.Time
	goCommand  string
	sourceRepo string
}

func main() {
	var o options
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&o.repo, "repo", ".", "the repository's root directory (where go.mod is)")
	fs.StringVar(&o.platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated OS/ARCH list")
	fs.StringVar(&o.output, "output", "", "write the image index as an OCI layout tar file here")
	fs.StringVar(&o.push, "push", "", "push the image index to this reference (registry/repository:tag)")
	fs.StringVar(&o.tag, "tag", "", "the ref.name annotation in the OCI layout (default: the -version)")
	fs.StringVar(&o.version, "version", "", "stamped into the binary (internal/version), shown by --version")
	fs.StringVar(&o.commit, "commit", "", "the VCS revision, stamped the same way")
	fs.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM CA bundle to install at /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates)")
	fs.StringVar(&o.goCommand, "go", "go", "the go command")
	fs.StringVar(&o.sourceRepo, "source", "https://github.com/kedacore/keda-cosmosdb-scaler", "org.opencontainers.image.source label")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if o.output == "" && o.push == "" {
		fmt.Fprintln(os.Stderr, "image: give -output FILE, -push REF or both")
		os.Exit(2)
	}
	// Reproducible: the time stamps are SOURCE_DATE_EPOCH's (the commit's in
	// make image), else the Unix epoch.
	o.created = time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "image: SOURCE_DATE_EPOCH is not a number of seconds")
			os.Exit(2)
		}
		o.created = time.Unix(sec, 0).UTC()
	}
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(o options) error {
	ca, err := os.ReadFile(o.caBundle)
	if err != nil {
		return fmt.Errorf("CA bundle: %w (on Debian: apt-get install ca-certificates)", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return fmt.Errorf("CA bundle %s holds no PEM certificate", o.caBundle)
	}
	base, err := layer(o.created, baseFiles(ca))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "cosmosdb-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range strings.Split(o.platforms, ",") {
		goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || goos == "" || goarch == "" {
			return fmt.Errorf("-platforms: %q is not OS/ARCH", p)
		}
		bin := filepath.Join(tmp, goos+"-"+goarch, command)
		if err := goBuild(o, goos, goarch, bin); err != nil {
			return err
		}
		raw, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		app, err := layer(o.created, []file{{name: command, mode: 0o755, data: raw}})
		if err != nil {
			return err
		}
		img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, app)
		if err != nil {
			return err
		}
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = goos, goarch
		cfg.Created = v1.Time{Time: o.created}
		cfg.Config.Entrypoint = []string{"/" + command}
		cfg.Config.User = fmt.Sprintf("%d:%d", uid, uid)
		cfg.Config.WorkingDir = "/"
		cfg.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
		cfg.Config.ExposedPorts = map[string]struct{}{"6000/tcp": {}, "6001/tcp": {}}
		cfg.Config.Labels = map[string]string{
			"org.opencontainers.image.title":    command,
			"org.opencontainers.image.source":   o.sourceRepo,
			"org.opencontainers.image.version":  o.version,
			"org.opencontainers.image.revision": o.commit,
			"org.opencontainers.image.licenses": "Apache-2.0",
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return err
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}},
		})
	}
	if o.output != "" {
		if err := writeArchive(o, index, tmp); err != nil {
			return err
		}
		fmt.Println("image: wrote", o.output)
	}
	if o.push != "" {
		ref, err := name.ParseReference(o.push)
		if err != nil {
			return fmt.Errorf("-push: %w", err)
		}
		if err := remote.WriteIndex(ref, index, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		digest, _ := index.Digest()
		fmt.Printf("image: pushed %s@%s\n", ref, digest)
	}
	return nil
}

// goBuild cross-compiles the command as the Dockerfile does.
func goBuild(o options, goos, goarch, out string) error {
	ldflags := "-s -w -X " + modulePath + "/internal/version.version=" + o.version +
		" -X " + modulePath + "/internal/version.commit=" + o.commit
	cmd := exec.Command(o.goCommand, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/"+command)
	cmd.Dir = o.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	fmt.Fprintf(os.Stderr, "image: go build %s/%s\n", goos, goarch)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", goos, goarch, err)
	}
	return nil
}

type file struct {
	name string // without a leading slash
	mode int64
	data []byte
	dir  bool
}

// baseFiles are what a static Go binary needs around it: CA certificates,
// a user database naming the non-root user, a writable /tmp.
func baseFiles(ca []byte) []file {
	return []file{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", uid)},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, uid)},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	}
}

// layer makes a gzip-compressed OCI layer of files, owned by root except
// the non-root user's home directory.
func layer(created time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: created, Format: tar.FormatPAX}
		if strings.HasPrefix(f.name, "home/nonroot") {
			h.Uid, h.Gid = uid, uid
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, f.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// writeArchive writes the index as an OCI image layout, then tars that
// directory into o.output.
func writeArchive(o options, index v1.ImageIndex, tmp string) error {
	dir := filepath.Join(tmp, "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	tag := o.tag
	if tag == "" {
		tag = o.version
	}
	var opts []layout.Option
	if tag != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag}))
	}
	if err := p.AppendIndex(index, opts...); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.output), 0o755); err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(o.output), ".image-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	tw := tar.NewWriter(out)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), o.created, 0, 0, "", ""
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(errors.New("writing "+o.output), err)
	}
	return os.Rename(out.Name(), o.output)
}
