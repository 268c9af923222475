// Apollo Client (HttpLink, optionally behind the persisted-queries link) runs
// config.operations in order, each with a client of its own (no cache shared),
// and prints per operation its data or the error Apollo surfaced, and every
// HTTP exchange its fetch made (method, whether the query text or an APQ hash
// was sent — its text — and the status).
import { createHash } from "node:crypto";
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";
import { authHeaders, config, describeError, fail, print } from "./common.mjs";

async function run(op) {
  const exchanges = [];
  const recordingFetch = async (uri, options) => {
    const url = new URL(uri);
    let sent = {};
    if (options.method === "GET") {
      sent = {
        query: url.searchParams.get("query") ?? "",
        hash: JSON.parse(url.searchParams.get("extensions") ?? "{}")?.persistedQuery?.sha256Hash ?? "",
      };
    } else {
      const body = JSON.parse(options.body);
      sent = { query: body.query ?? "", hash: body.extensions?.persistedQuery?.sha256Hash ?? "" };
    }
    const res = await fetch(uri, options);
    exchanges.push({ method: options.method, ...sent, status: res.status, accept: options.headers?.accept ?? "" });
    return res;
  };
  let link = new HttpLink({ uri: config.url, headers: authHeaders(), fetch: recordingFetch });
  if (op.apq) {
    link = ApolloLink.from([
      new PersistedQueryLink({
        sha256: (text) => createHash("sha256").update(text).digest("hex"),
        useGETForHashedQueries: op.apq === "GET",
      }),
      link,
    ]);
  }
  const client = new ApolloClient({ link, cache: new InMemoryCache() });
  const document = gql(op.query);
  const isMutation = document.definitions.some((d) => d.kind === "OperationDefinition" && d.operation === "mutation");
  try {
    const result = isMutation
      ? await client.mutate({ mutation: document, variables: op.variables, fetchPolicy: "no-cache" })
      : await client.query({ query: document, variables: op.variables, fetchPolicy: "no-cache" });
    return { data: result.data ?? null, exchanges };
  } catch (err) {
    return { error: describeError(err), exchanges };
  } finally {
    client.stop();
  }
}

try {
  const results = [];
  for (const op of config.operations) {
    results.push(await run(op));
  }
  print({ results });
} catch (err) {
  fail(err);
}
