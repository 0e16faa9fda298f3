package kubenode

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// serveLogs serves the part of the kubelet API that `kubectl logs` reaches
// through the API server (GET /containerLogs/NS/POD/CONTAINER, with
// tailLines, or follow: the log as it grows until the container exits) over TLS with a self-signed certificate: the API server
// verifies a kubelet's certificate only when given
// --kubelet-certificate-authority. It returns the port.
func (a *Agent) serveLogs() (int, func(), error) {
	cert, err := selfSigned()
	if err != nil {
		return 0, nil, err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		return 0, nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(a.containerLogs), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	return l.Addr().(*net.TCPAddr).Port, func() { srv.Close() }, nil
}

func (a *Agent) containerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/containerLogs/") || len(parts) != 3 {
		http.Error(w, "this node agent serves /containerLogs/NAMESPACE/POD/CONTAINER only", http.StatusNotFound)
		return
	}
	path := a.logPathOf(parts[0], parts[1], parts[2])
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		http.Error(w, fmt.Sprintf("container %q in pod %s/%s has no log", parts[2], parts[0], parts[1]), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if n, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && n >= 0 {
		lines := bytes.SplitAfter(b, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > n {
			b = bytes.Join(lines[len(lines)-n:], nil)
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write(b)
	if r.URL.Query().Get("follow") == "true" {
		a.followLog(r.Context(), w, path, int64(len(b)), a.containerDone(parts[0], parts[1], parts[2]))
	}
}

// followLog streams path from offset as it grows, until done is closed
// (the container exited: what it wrote is sent, then the stream ends) or
// the client goes away.
func (a *Agent) followLog(ctx context.Context, w http.ResponseWriter, path string, offset int64, done <-chan struct{}) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return
	}
	flush := func() bool {
		if _, err := io.Copy(w, f); err != nil {
			return false
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		return true
	}
	for {
		if !flush() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-done:
			flush()
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kubenode"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
