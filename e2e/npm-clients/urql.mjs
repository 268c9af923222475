// urql (@urql/core: fetchExchange for queries and mutations,
// subscriptionExchange over a graphql-ws client for subscriptions) runs
// config.query, then config.mutation, then subscribes to config.subscription
// and keeps config.count events; it prints each result's data or error.
import WebSocket from "ws";
import { createClient as createWSClient } from "graphql-ws";
import { Client, fetchExchange, subscriptionExchange } from "@urql/core";
import { authHeaders, config, describeError, fail, print } from "./common.mjs";

class AuthorizedWebSocket extends WebSocket {
  constructor(address, protocols) {
    super(address, protocols, { headers: authHeaders() });
  }
}

const ws = createWSClient({ url: config.wsUrl, webSocketImpl: AuthorizedWebSocket, retryAttempts: 0 });
const client = new Client({
  url: config.url,
  requestPolicy: "network-only",
  fetchOptions: () => ({ headers: authHeaders() }),
  exchanges: [
    fetchExchange,
    subscriptionExchange({
      forwardSubscription: (request) => ({
        subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? "" }, sink) }),
      }),
    }),
  ],
});

const outcome = (result) => (result.error ? { error: describeError(result.error) } : { data: result.data });

try {
  const out = {};
  out.query = outcome(await client.query(config.query, config.variables).toPromise());
  out.mutation = outcome(await client.mutation(config.mutation, config.mutationVariables).toPromise());
  out.events = [];
  await new Promise((resolve) => {
    const { unsubscribe } = client.subscription(config.subscription).subscribe((result) => {
      if (result.error) {
        out.subscriptionError = describeError(result.error);
        unsubscribe();
        resolve();
        return;
      }
      out.events.push(result.data);
      if (out.events.length === config.count) {
        unsubscribe();
        resolve();
      }
    });
  });
  await ws.dispose();
  print(out);
} catch (err) {
  fail(err);
}
