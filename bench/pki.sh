#!/usr/bin/env bash
# bench/pki.sh DIR -- throwaway test PKI for bench/run.sh (openssl CLI only, EC P-256).
#   upstream-ca.{key,crt}  root that signs nginx's certificate (vaultgate's upstream.ca_file)
#   upstream.{key,crt}     nginx's certificate: api.bench.test, other.bench.test, 127.0.0.1
#   proxy-ca.{key,crt}     vaultgate's CA (ca.cert / ca.key), which signs its MITM leaves
#   client-trust.pem       what the benchmark client trusts through the proxy: the proxy CA
#                          (MITM'd hosts) and the upstream CA (tunnelled hosts), as the
#                          bundle `vaultgate bootstrap` writes for a sandbox
set -euo pipefail
D=${1:?usage: pki.sh DIR}
mkdir -p "$D"
cd "$D"
NEWKEY=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
ca() {  # ca NAME CN
  openssl req -x509 -nodes "${NEWKEY[@]}" -keyout "$1.key" -out "$1.crt" -days 7 \
    -subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
ca upstream-ca "vaultgate bench upstream CA"
ca proxy-ca "vaultgate bench proxy CA"
openssl req -new -nodes "${NEWKEY[@]}" -keyout upstream.key -out upstream.csr \
  -subj "/CN=api.bench.test" 2>/dev/null
printf '%s\n' "subjectAltName=DNS:api.bench.test,DNS:other.bench.test,IP:127.0.0.1,IP:127.0.0.2" \
  "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=serverAuth" > upstream.ext
openssl x509 -req -in upstream.csr -CA upstream-ca.crt -CAkey upstream-ca.key \
  -CAcreateserial -days 7 -sha256 -extfile upstream.ext -out upstream.crt 2>/dev/null
openssl verify -CAfile upstream-ca.crt upstream.crt >/dev/null
cat proxy-ca.crt upstream-ca.crt > client-trust.pem
# nginx workers run as an unprivileged user when started by root; the keys are throwaway.
chmod 644 ./*.crt ./*.key ./*.pem
# Except vaultgate's own CA key, which it refuses when others can read it.
chmod 600 proxy-ca.key
