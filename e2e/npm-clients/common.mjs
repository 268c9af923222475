// What every client script shares: its configuration (one JSON argument; the
// credential comes from CIVIC_BEARER, never from the command line) and its
// output (one JSON document on stdout, read by e2e/npm_clients_*_test.go).

export const config = JSON.parse(process.argv[2] ?? "{}");

// authHeaders is the Authorization header of CIVIC_BEARER (none when unset:
// the tests of a request without a credential).
export function authHeaders() {
  const bearer = process.env.CIVIC_BEARER;
  return bearer ? { Authorization: `Bearer ${bearer}` } : {};
}

// describeError keeps what a client library surfaced of a failure: its
// class, message, HTTP status and body, GraphQL errors, close code.
export function describeError(err) {
  if (Array.isArray(err)) {
    return { name: "GraphQLErrors", errors: err };
  }
  if (err && typeof err === "object" && "code" in err && "reason" in err && !(err instanceof Error)) {
    return { name: "CloseEvent", code: err.code, reason: err.reason };
  }
  const out = { name: err?.name ?? typeof err, message: String(err?.message ?? err) };
  if (err?.statusCode !== undefined) out.statusCode = err.statusCode;
  if (err?.bodyText !== undefined) out.bodyText = err.bodyText;
  if (err?.errors !== undefined) out.errors = err.errors;
  if (err?.graphQLErrors?.length) out.errors = err.graphQLErrors;
  if (err?.networkError) out.network = describeError(err.networkError);
  if (err?.response?.status !== undefined) out.statusCode = err.response.status;
  return out;
}

// print writes the script's result and ends it.
export function print(result) {
  process.stdout.write(JSON.stringify(result) + "\n");
}

// fail prints an unexpected failure and exits non-zero.
export function fail(err) {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
}
