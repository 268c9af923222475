package libraryclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	graphql "github.com/hasura/go-graphql-client"
)

// Subscription is one loanEvents subscription over graphql-transport-ws.
type Subscription struct {
	client *graphql.SubscriptionClient
	// Events receives every event; Errors every subscription error.
	Events chan LoanEventView
	Errors chan error
	// Done receives the error that ended the socket (nil on Close).
	Done chan error
}

// SubscribeLoanEvents opens a socket to url (ws:// or wss://) with key as the
// bearer token of the upgrade request (civicgate refuses a token inside
// connection_init: the key travels in the Authorization header only), and
// subscribes to loanEvents. The client does not reconnect: an error closing the socket
// ends it and is sent on Done. Events arrive in the server's order.
func SubscribeLoanEvents(url, key string) (*Subscription, error) {
	header := http.Header{}
	if key != "" {
		header.Set("Authorization", "Bearer "+key)
	}
	s := &Subscription{
		Events: make(chan LoanEventView, 64),
		Errors: make(chan error, 64),
		Done:   make(chan error, 1),
	}
	s.client = graphql.NewSubscriptionClient(url).
		WithProtocol(graphql.GraphQLWS).
		WithWebSocketOptions(graphql.WebsocketOptions{HTTPHeader: header}).
		WithConnectionParams(map[string]any{"client": "libraryclient"}).
		WithRetryTimeout(0).
		WithExitWhenNoSubscription(false).
		WithSyncMode(true). // deliver events in the order the server sent them
		OnError(func(_ *graphql.SubscriptionClient, err error) error { return err })
	var sub struct {
		LoanEvents LoanEventView `graphql:"loanEvents"`
	}
	_, err := s.client.Subscribe(&sub, nil, func(data []byte, err error) error {
		if err != nil {
			s.Errors <- err
			return nil
		}
		var msg struct {
			LoanEvents LoanEventView `json:"loanEvents"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			s.Errors <- fmt.Errorf("decode loanEvents: %w", err)
			return nil
		}
		s.Events <- msg.LoanEvents
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe loanEvents: %w", err)
	}
	go func() { s.Done <- s.client.RunWithContext(context.Background()) }()
	return s, nil
}

// CloseCode is the WebSocket close code carried by err (one from Done), or
// -1 when it carries none.
func (s *Subscription) CloseCode(err error) int {
	return int(s.client.GetWebSocketStatusCode(err))
}

// Close ends the subscription and the socket.
func (s *Subscription) Close() error {
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("close subscription client: %w", err)
	}
	return nil
}
