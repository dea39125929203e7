#!/usr/bin/env node
// Verifies signed answers of the tokendata service with npm's
// http-message-signatures (an RFC 9421 implementation that is not ours)
// and the body's Content-Digest (RFC 9530) with Node's own SHA-256.
//
// Input on stdin, JSON: {"cases": [{"url", "keys_url", "encoding",
// "method", "mutate", "label"}]}. Each case fetches url with
// Accept-Encoding: encoding (identity, gzip or br) and the JWKS at
// keys_url, applies the mutation, and verifies. mutate is "" (none),
// "body" (flip one bit of one byte of the body), "header:<name>" (change
// one byte of that field's value) or "key" (replace the published keys by
// a key that did not sign). Output on stdout, JSON: {"results": [{"ok",
// "reason", "keyid"}]}, one per case, in order. Exit status 0 unless the
// input itself is unusable.
'use strict';

const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');
const { httpbis, createVerifier } = require('http-message-signatures');
const { parseDictionary } = require('structured-headers');

// What a signature must cover: the data date too whenever the answer
// carries one (answers made of the service's configuration alone have
// none).
const BASE_REQUIRED = ['@status', 'content-type', 'content-digest'];
function requiredOf(headers) {
  return 'x-data-updated-at' in headers ? [...BASE_REQUIRED, 'x-data-updated-at'] : BASE_REQUIRED;
}
const MAX_BODY = 8 << 20;

function get(url, method, encoding) {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https:') ? https : http;
    const req = mod.request(url, { method, headers: { 'accept-encoding': encoding } }, (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (c) => {
        size += c.length;
        if (size > MAX_BODY) {
          req.destroy(new Error(`body larger than ${MAX_BODY} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(10000, () => req.destroy(new Error('timed out after 10 s')));
    req.on('error', reject);
    req.end();
  });
}

// thumbprint is the RFC 7638 thumbprint of an OKP key (RFC 8037).
function thumbprint(jwk) {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return crypto.createHash('sha256').update(canonical).digest('base64url');
}

// keyring maps key ids to public keys, each kid checked against its thumbprint.
function keyring(jwks) {
  const keys = new Map();
  for (const jwk of jwks.keys || []) {
    if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519') continue;
    const tp = thumbprint(jwk);
    if (jwk.kid !== tp) throw new Error(`published kid ${jwk.kid} is not its key's thumbprint ${tp}`);
    keys.set(tp, crypto.createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' }));
  }
  return keys;
}

function strangerJWKS() {
  const { publicKey } = crypto.generateKeyPairSync('ed25519');
  const jwk = publicKey.export({ format: 'jwk' });
  return { keys: [{ ...jwk, kid: thumbprint(jwk) }] };
}

function mutate(res, how) {
  if (!how) return;
  if (how === 'body') {
    if (res.body.length === 0) throw new Error('no body to change');
    res.body[Math.floor(res.body.length / 2)] ^= 1;
    return;
  }
  if (how.startsWith('header:')) {
    const name = how.slice('header:'.length).toLowerCase();
    const v = res.headers[name];
    if (typeof v !== 'string' || v.length === 0) throw new Error(`no ${name} field to change`);
    const i = v.length - 2 >= 0 ? v.length - 2 : 0;
    const c = v.charCodeAt(i) === 0x30 ? '1' : '0';
    res.headers[name] = v.slice(0, i) + c + v.slice(i + 1);
    return;
  }
  if (how === 'key') return;
  throw new Error(`unknown mutation ${how}`);
}

function checkDigest(res) {
  const field = res.headers['content-digest'];
  if (!field) throw new Error('no Content-Digest field');
  const member = parseDictionary(field).get('sha-256');
  if (!member || !(member[0] instanceof ArrayBuffer)) throw new Error('Content-Digest has no sha-256 byte sequence');
  const want = Buffer.from(member[0]);
  const got = crypto.createHash('sha256').update(res.body).digest();
  if (!got.equals(want)) {
    throw new Error(`content digest mismatch: body sha-256 ${got.toString('base64')}, field ${want.toString('base64')}`);
  }
}

async function verifyCase(c) {
  const method = c.method || 'GET';
  const encoding = c.encoding || 'identity';
  const res = await get(c.url, method, encoding);
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const got = res.headers['content-encoding'] || 'identity';
  if (got !== encoding) throw new Error(`asked for ${encoding}, got Content-Encoding ${got}`);
  const keysRes = await get(c.keys_url, 'GET', 'identity');
  if (keysRes.status !== 200) throw new Error(`keys: status ${keysRes.status}`);
  let jwks = JSON.parse(keysRes.body.toString('utf8'));
  mutate(res, c.mutate);
  if (c.mutate === 'key') jwks = strangerJWKS();
  const keys = keyring(jwks);
  const label = c.label || 'tokendata';
  const labels = parseDictionary(res.headers['signature-input'] || '');
  if (!labels.has(label)) throw new Error(`no signature labelled ${label}`);
  let keyid = '';
  const ok = await httpbis.verifyMessage({
    keyLookup: async (params) => {
      const key = keys.get(params.keyid);
      if (!key) return null;
      keyid = params.keyid;
      return { id: params.keyid, algs: ['ed25519'], verify: createVerifier(key, 'ed25519') };
    },
    requiredFields: requiredOf(res.headers),
    requiredParams: ['created', 'keyid', 'alg'],
    tolerance: 60,
  }, { status: res.status, headers: res.headers });
  if (ok === null) throw new Error('unknown key: no published key signed the answer');
  if (ok !== true) throw new Error('bad signature');
  if (method !== 'HEAD') checkDigest(res);
  return keyid;
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const results = [];
  for (const c of input.cases) {
    try {
      const keyid = await verifyCase(c);
      results.push({ ok: true, reason: '', keyid });
    } catch (e) {
      results.push({ ok: false, reason: String(e && e.message ? e.message : e), keyid: '' });
    }
  }
  process.stdout.write(JSON.stringify({ results }) + '\n');
}

main().catch((e) => {
  process.stderr.write(`sigcheck: ${e && e.stack ? e.stack : e}\n`);
  process.exit(2);
});
