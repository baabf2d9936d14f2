package invoke

// ApprovalHeader is the HTTP header carrying the id of the approval a call
// is retried with, on every transport that carries one over HTTP (REST
// /v1/invoke, MCP, the fronted MCP servers, the client). The agent a call
// acts as is identity.Header.
const ApprovalHeader = "X-Caphub-Approval"
