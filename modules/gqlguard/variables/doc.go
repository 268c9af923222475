// Package variables is the fourth step of graphql_guard's pipeline: it
// coerces a request's variables for the selected operation (gqlparser's
// validator.VariableValues, 32-bit Int) and evaluates the operation's cost
// against them. The usual variables — built-in scalars and enums given as
// matching JSON literals — are checked in place without decoding, and each
// operation remembers the result per variables text, so a repeated request
// neither decodes nor coerces.
//
// Before it: the document step (package document) prepares an Operation per
// compiled operation, with the cost the analysis step (package analysis)
// planned. After it: the shell checks entitlements and limits and spends the
// cost on the key's budget.
package variables
