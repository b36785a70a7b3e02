package main

// The CLI's own work each time it starts a provider with mutual TLS, which
// Terraform and OpenTofu always ask for: a fresh ECDSA P-521 key with a
// self-signed certificate before the provider runs (Go's x509 checks the new
// signature too), and one P-521 signature in the TLS handshake. No provider,
// however small, can take this off a plan. bench/network-plan.sh prints it.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"
)

func BenchmarkClientCertificate(b *testing.B) {
	for b.Loop() {
		key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		template := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "localhost"},
			DNSNames:              []string{"localhost"},
			NotBefore:             time.Now(),
			NotAfter:              time.Now().Add(time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
			ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		if _, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClientHandshakeSignature(b *testing.B) {
	key, err := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	digest := sha512.Sum512([]byte("TLS 1.3, client CertificateVerify"))
	for b.Loop() {
		if _, err := ecdsa.SignASN1(rand.Reader, key, digest[:]); err != nil {
			b.Fatal(err)
		}
	}
}
