#!/usr/bin/env bash
# Makes a cluster CA and one certificate per node for TLS between actrain nodes
# (docs/deployment.md, "TLS"). Usage: scripts/make-certs.sh DIR NAME...
# Writes DIR/ca.pem (give every node as [cluster] tls-ca), DIR/ca.key (keep it off the nodes),
# and DIR/NAME.pem + DIR/NAME.key for each NAME (one node's tls-certificate and tls-key).
# Keys are EC P-256, unencrypted, mode 0600; certificates are valid for 825 days. Each run
# makes a new CA: certificates of two runs do not accept each other.
set -euo pipefail
if (($# < 2)); then
  echo "usage: $0 DIR NAME..." >&2
  exit 2
fi
dir="$1"
shift
mkdir -p "$dir"
umask 077
days=825
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=actrain cluster CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
for name in "$@"; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days "$days" -out "$dir/$name.pem" 2>/dev/null
  rm -f "$dir/$name.csr"
  chmod 644 "$dir/$name.pem"
done
rm -f "$dir/ca.srl"
chmod 644 "$dir/ca.pem"
