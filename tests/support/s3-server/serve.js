#!/usr/bin/env node
// Test-only S3-compatible server on loopback, started and stopped by tests/support/s3_server.cc.
//
// @20minutes/s3rver verifies AWS Signature Version 4 (header and query forms) against the key
// pairs registered below, so a wrong secret is refused with SignatureDoesNotMatch. It lets
// unsigned requests through as anonymous; this launcher refuses those too, so every request the
// service makes must be signed. (It does not check the payload hash against the body.) It also
// adds what S3 does with If-Match on GET/HEAD (412 when the ETag differs), which s3rver lacks.
//
// Every request is logged to stdout (the test's log file), one line each, after it is answered:
//   request <METHOD> <path as sent> <status> key=<access key id of the signature, or ->
// so a test can show that a request never reached the store, and with which credentials one did.
//
// usage: serve.js --port N --directory DIR (--access-key ID --secret-key SECRET)...
//                 [--bucket NAME]... [--address IP]
// --address (default 127.0.0.1): the container test binds its podman network's gateway address,
// which the runner container reaches.
// Each --access-key/--secret-key pair is one valid key pair (the first is the service's).
'use strict';

const fs = require('fs');
const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');

function parseArgs(argv) {
  const args = { buckets: [], accessKeys: [], secretKeys: [], address: '127.0.0.1' };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`missing value for ${flag}`);
    switch (flag) {
      case '--port': args.port = Number(value); break;
      case '--directory': args.directory = value; break;
      case '--access-key': args.accessKeys.push(value); break;
      case '--secret-key': args.secretKeys.push(value); break;
      case '--bucket': args.buckets.push(value); break;
      case '--address': args.address = value; break;
      default: throw new Error(`unknown flag ${flag}`);
    }
  }
  for (const required of ['port', 'directory']) {
    if (!args[required]) throw new Error(`--${required} is required`);
  }
  if (args.accessKeys.length === 0 || args.accessKeys.length !== args.secretKeys.length) {
    throw new Error('give one or more --access-key ID --secret-key SECRET pairs');
  }
  return args;
}

// The access key id a request was signed with (header or query form), or '-'.
function signingKey(ctx) {
  const credential = /Credential=([^/,\s]+)\//.exec(ctx.headers.authorization || '');
  if (credential) return credential[1];
  const query = ctx.query['X-Amz-Credential'];
  return typeof query === 'string' && query.includes('/') ? query.split('/')[0] : '-';
}

async function logRequest(ctx, next) {
  try {
    await next();
  } finally {
    process.stdout.write(`request ${ctx.method} ${ctx.originalUrl} ${ctx.status} ` +
                         `key=${signingKey(ctx)}\n`);
  }
}

function refuseUnsigned(ctx, next) {
  const signed = 'authorization' in ctx.headers || 'X-Amz-Algorithm' in ctx.query ||
                 'Signature' in ctx.query;
  if (signed) return next();
  ctx.status = 403;
  ctx.type = 'application/xml';
  ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>' +
             '<Message>Anonymous access is disabled on this test server</Message></Error>';
  return undefined;
}

// S3 answers a GET or HEAD whose If-Match names another ETag with 412 PreconditionFailed.
async function ifMatch(ctx, next) {
  await next();
  const wanted = ctx.get('if-match');
  if (!wanted || wanted === '*' || !['GET', 'HEAD'].includes(ctx.method)) return;
  if (![200, 206].includes(ctx.status) || ctx.response.get('ETag') === wanted) return;
  if (ctx.body && typeof ctx.body.destroy === 'function') ctx.body.destroy();
  ctx.remove('ETag');
  ctx.remove('Content-Range');
  ctx.status = 412;
  ctx.type = 'application/xml';
  ctx.body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code>' +
             '<Message>At least one of the pre-conditions you specified did not hold</Message>' +
             '</Error>';
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(args.directory, { recursive: true });
  // Only the test's key pairs are valid: drop the package's built-in dummy key.
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  args.accessKeys.forEach((id, i) => AWSAccount.DUMMY_ACCOUNT.createKeyPair(id, args.secretKeys[i]));

  const server = new S3rver({
    address: args.address,
    port: args.port,
    directory: args.directory,
    silent: true,
    // Virtual-hosted requests arrive as <bucket>.s3.localhost:<port>.
    serviceEndpoint: 'localhost',
    configureBuckets: args.buckets.map((name) => ({ name, configs: [] })),
  });
  server.middleware.unshift(logRequest, refuseUnsigned, ifMatch);
  const address = await server.run();
  process.stdout.write(`listening on ${address.address}:${address.port}\n`);
  const stop = () => server.close().finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(`s3 test server: ${err.message}\n`);
  process.exit(1);
});
