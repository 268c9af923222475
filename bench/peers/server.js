// PostGraphile 4 over the records database, for bench/backend-peers.sh only. Reads DATABASE_URL, listens on
// 127.0.0.1 on a free port and prints {"addr":"127.0.0.1:PORT"} on stdout once it answers. Production-style
// options (docs: https://www.graphile.org/postgraphile/usage-library/): no watch, no GraphiQL, no query log,
// no mutations (the page is a read); the schema is built before the port opens.
'use strict';
const http = require('http');
const { postgraphile } = require('postgraphile');

const dsn = process.env.DATABASE_URL;
if (!dsn) {
  console.error('server.js: DATABASE_URL is not set');
  process.exit(2);
}

const handler = postgraphile(dsn, process.env.BENCH_PEERS_PG_SCHEMA || 'public', {
  watchPg: false,
  graphiql: false,
  disableQueryLog: true,
  disableDefaultMutations: true,
  retryOnInitFail: false,
  extendedErrors: ['errcode'],
  showErrorStack: false,
  setofFunctionsContainNulls: false,
  ignoreRBAC: false,
  dynamicJson: true,
});

async function main() {
  await handler.getGraphQLSchema(); // introspect before announcing the address
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const { address, port } = server.address();
    process.stdout.write(JSON.stringify({ addr: `${address}:${port}` }) + '\n');
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  console.error('server.js:', err && err.message ? err.message : err);
  process.exit(1);
});
