package agent

// The rules of the official OSSA v0.2.9 agent-manifest JSON Schema
// (ossa-0.2.9.schema.json, draft-07, $id
// https://openstandardagents.org/schemas/v0.2.9/agent.json), one variable per
// definition, in the schema's order. Each line carries the constraints of
// one property: type, enum, pattern, format, lengths, bounds, required keys,
// and closed() where the schema says additionalProperties: false.
// Descriptions are kept where they explain a constraint (a pattern, a
// required field); defaults and examples are left out, as they do not
// constrain. TestRulesMatchSchema checks these tables against the schema
// file, keyword by keyword.

// manifestDef is the schema root: an OSSA agent manifest.
var manifestDef = object(
	property("apiVersion", str().pattern(`^ossa/v(0\.[2-9]+\.[0-9]+(-dev)?|1)(\.[0-9]+)?(-[a-zA-Z0-9]+)?$`, "an OSSA API version such as ossa/v0.2.9, ossa/v0.2.9-dev, ossa/v0.3.0 or ossa/v1 (a suffix is one -word of letters and digits, without dots)")),
	property("kind", str().enum("Agent").doc("Resource type - currently only 'Agent' is supported")),
	property("metadata", metadataDef),
	property("spec", agentSpecDef),
	property("extensions", object(
		property("agents_md", agentsMdExtensionDef),
		property("kagent", kagentExtensionDef),
		property("buildkit", buildKitExtensionDef),
		property("drupal", drupalExtensionDef),
		property("librechat", libreChatExtensionDef),
		property("mcp", mcpExtensionDef),
		property("langchain", langChainExtensionDef),
		property("crewai", crewAIExtensionDef),
		property("openai_agents", openAIAgentsExtensionDef),
		property("cursor", cursorExtensionDef),
		property("langflow", langflowExtensionDef),
		property("autogen", autoGenExtensionDef),
		property("vercel_ai", vercelAIExtensionDef),
		property("llamaindex", llamaIndexExtensionDef),
		property("langgraph", langGraphExtensionDef),
		property("anthropic", anthropicExtensionDef),
		property("google_adk", googleADKExtensionDef),
		property("a2a", a2aExtensionDef),
	)),
).require("apiVersion", "kind", "metadata", "spec").closed().named(manifestRuleName)

// metadataDef is #/definitions/Metadata.
var metadataDef = object(
	property("name", str().pattern(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, "a DNS-1123 name: lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. my-agent").maxLength(253).doc("Agent identifier (DNS-1123 subdomain format for Kubernetes compatibility)")),
	property("version", str().pattern(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`, "a semantic version (semver 2.0.0) MAJOR.MINOR.PATCH such as 1.0.0 or 1.2.0-beta.1, without a leading v")),
	property("description", str().maxLength(2000)),
	property("labels", object().additional(str().maxLength(63))),
	property("annotations", object().additional(str())),
).require("name").closed().named("Metadata")

// agentSpecDef is #/definitions/AgentSpec.
var agentSpecDef = object(
	property("taxonomy", taxonomyDef),
	property("role", str().minLength(1).doc("Agent role/system prompt describing behavior and capabilities")),
	property("llm", llmConfigDef),
	property("tools", array(toolDef)),
	property("autonomy", autonomyDef),
	property("constraints", constraintsDef),
	property("observability", observabilityDef),
	property("state", stateDef),
	property("security", securityDef),
	property("reliability", reliabilityDef),
	property("collaboration", collaborationDef),
	property("safety", safetyDef),
	property("deployment", deploymentDef),
	property("reasoning", reasoningDef),
	property("prompts", promptsDef),
	property("knowledge_graph", knowledgeGraphDef),
	property("identity", identityDef),
	property("runtimes", object().additional(object(
		property("enabled", boolean()),
		property("endpoint", str().format("uri")),
		property("model", str().enum("opus", "sonnet", "haiku")),
		property("allowedTools", array(str())),
	))),
).require("role").named("AgentSpec")

// taxonomyDef is #/definitions/Taxonomy.
var taxonomyDef = object(
	property("domain", str().doc("Primary domain classification")),
	property("subdomain", str()),
	property("capability", str()),
).require("domain").closed().named("Taxonomy")

// llmConfigDef is #/definitions/LLMConfig.
var llmConfigDef = object(
	property("provider", str().enum("openai", "anthropic", "google", "azure", "ollama", "custom").doc("LLM provider")),
	property("model", str().doc("Model identifier")),
	property("temperature", number().minimum(0).maximum(2)),
	property("maxTokens", integer().minimum(1)),
	property("topP", number().minimum(0).maximum(1)),
	property("frequencyPenalty", number().minimum(-2).maximum(2)),
	property("presencePenalty", number().minimum(-2).maximum(2)),
	property("fallback_models", array(object(
		property("provider", str().enum("openai", "anthropic", "google", "azure", "ollama", "custom")),
		property("model", str()),
	).require("provider", "model"))),
	property("retry_config", object(
		property("max_attempts", integer().minimum(1).maximum(5)),
		property("backoff_strategy", str().enum("fixed", "exponential")),
	)),
	property("cost_tracking", object(
		property("enabled", boolean()),
		property("budget_alert_threshold", number().minimum(0)),
		property("cost_allocation_tags", object().additional(str())),
	)),
).require("provider", "model").closed().named("LLMConfig")

// toolDef is #/definitions/Tool.
var toolDef = object(
	property("type", str().enum("mcp", "kubernetes", "http", "grpc", "function", "a2a", "custom").doc("Tool integration type")),
	property("name", str()),
	property("server", str()),
	property("namespace", str()),
	property("endpoint", str()),
	property("capabilities", array(capabilityDef)),
	property("config", object()),
	property("auth", object(
		property("type", str().enum("bearer", "oauth2", "mtls", "apikey", "none")),
		property("credentials", str()),
		property("scopes", array(str())),
	)),
	property("transport", transportDef),
	property("compliance_tags", array(str())),
	property("health_check", object(
		property("enabled", boolean()),
		property("endpoint", str()),
		property("interval_seconds", integer().minimum(1)),
		property("timeout_seconds", integer().minimum(1)),
	)),
	property("circuit_breaker", object(
		property("enabled", boolean()),
		property("failure_threshold", integer().minimum(1)),
		property("timeout_seconds", number().minimum(0)),
	)),
).require("type").closed().named("Tool")

// capabilityDef is #/definitions/Capability.
var capabilityDef = object(
	property("name", str().doc("Capability name/identifier")),
	property("description", str()),
	property("version", str().pattern(`^[0-9]+\.[0-9]+$`, "a capability version MAJOR.MINOR such as 1.0")),
	property("deprecated", boolean()),
	property("deprecation_message", str()),
	property("input_schema", object()),
	property("output_schema", object()),
	property("examples", array(object(
		property("name", str()),
		property("description", str()),
		property("input", object()),
		property("output", object()),
	))),
	property("transport", transportDef),
	property("scopes", array(str())),
	property("compliance_tags", array(str())),
	property("timeout", object(
		property("execution_seconds", number().minimum(0)),
		property("connection_seconds", number().minimum(0)),
	)),
	property("retry_policy", object(
		property("max_attempts", integer().minimum(1).maximum(10)),
		property("backoff_strategy", str().enum("fixed", "exponential", "linear")),
		property("initial_delay_ms", integer().minimum(0)),
		property("max_delay_ms", integer().minimum(0)),
		property("retryable_errors", array(str())),
	)),
	property("error_handling", object(
		property("fallback_capability", str()),
		property("error_mapping", object().additional(str())),
		property("on_error", str().enum("fail", "fallback", "ignore", "retry")),
	)),
	property("caching", object(
		property("enabled", boolean()),
		property("ttl_seconds", integer().minimum(0)),
		property("cache_key_fields", array(str())),
		property("invalidation_strategy", str().enum("ttl", "manual", "event_driven")),
	)),
	property("idempotency", object(
		property("enabled", boolean()),
		property("key_fields", array(str())),
		property("ttl_seconds", integer().minimum(0)),
	)),
).require("name").closed().named("Capability")

// transportDef is #/definitions/Transport: Transport metadata for protocol-specific configuration (v0.2.5).
var transportDef = object(
	property("protocol", str().enum("http", "grpc", "a2a", "mcp", "websocket", "custom")),
	property("streaming", str().enum("none", "request", "response", "bidirectional")),
	property("binding", str()),
	property("content_type", str()),
	property("rateLimit", object(
		property("requestsPerMinute", integer().minimum(1)),
		property("requestsPerHour", integer().minimum(1)),
		property("burstLimit", integer().minimum(1)),
		property("strategy", str().enum("fixed_window", "sliding_window", "token_bucket", "leaky_bucket")),
		property("onExceeded", str().enum("reject", "queue", "throttle")),
	)),
).closed().named("Transport")

// stateDef is #/definitions/State: Agent state and memory configuration (v0.2.5).
var stateDef = object(
	property("mode", str().enum("stateless", "session", "long_running")),
	property("storage", object(
		property("type", str().enum("memory", "vector-db", "kv", "rdbms", "custom")),
		property("retention", str()),
		property("config", object()),
		property("encryption", object(
			property("enabled", boolean()),
			property("algorithm", str().enum("aes-256-gcm", "aes-256-cbc", "chacha20-poly1305")),
			property("keyRef", str()),
			property("keyRotation", object(
				property("enabled", boolean()),
				property("interval", str()),
			)),
		)),
	).closed()),
	property("context_window", object(
		property("max_messages", integer().minimum(1)),
		property("max_tokens", integer().minimum(1)),
		property("strategy", str().enum("sliding_window", "summarization", "importance_weighted")),
	).closed()),
).closed().named("State")

// autonomyDef is #/definitions/Autonomy.
var autonomyDef = object(
	property("level", str().enum("supervised", "autonomous", "fully_autonomous")),
	property("approval_required", boolean()),
	property("allowed_actions", array(str())),
	property("blocked_actions", array(str())),
	property("escalation_policy", object()),
).closed().named("Autonomy")

// constraintsDef is #/definitions/Constraints.
var constraintsDef = object(
	property("cost", object(
		property("maxTokensPerDay", integer().minimum(0)),
		property("maxTokensPerRequest", integer().minimum(0)),
		property("maxCostPerDay", number().minimum(0)),
		property("currency", str().pattern(`^[A-Z]{3}$`, "a three-letter upper-case currency code such as USD")),
	)),
	property("performance", object(
		property("maxLatencySeconds", number().minimum(0)),
		property("maxConcurrentRequests", integer().minimum(1)),
		property("timeoutSeconds", number().minimum(0)),
	)),
	property("resources", object(
		property("cpu", str()),
		property("memory", str()),
		property("gpu", str()),
	)),
).closed().named("Constraints")

// observabilityDef is #/definitions/Observability.
var observabilityDef = object(
	property("tracing", object(
		property("enabled", boolean()),
		property("exporter", str().enum("otlp", "jaeger", "zipkin", "custom")),
		property("endpoint", str()),
	)),
	property("metrics", object(
		property("enabled", boolean()),
		property("exporter", str().enum("prometheus", "otlp", "custom")),
		property("endpoint", str()),
	)),
	property("logging", object(
		property("level", str().enum("debug", "info", "warn", "error")),
		property("format", str().enum("json", "text")),
	)),
	property("alerting", object(
		property("enabled", boolean()),
		property("channels", array(str().enum("email", "slack", "pagerduty", "webhook", "sns"))),
		property("rules", array(object(
			property("name", str()),
			property("condition", str()),
			property("severity", str().enum("critical", "warning", "info")),
		))),
	)),
	property("slo", object(
		property("availability", number().minimum(0).maximum(100)),
		property("latency_p95_ms", number().minimum(0)),
		property("error_budget", number().minimum(0).maximum(100)),
	)),
).closed().named("Observability")

// kagentExtensionDef is #/definitions/KAgentExtension: kagent.dev Kubernetes-native agent deployment extension.
var kagentExtensionDef = object(
	property("kubernetes", object(
		property("namespace", str()),
		property("labels", object().additional(str())),
		property("annotations", object().additional(str())),
	)),
	property("deployment", object(
		property("replicas", integer().minimum(1)),
		property("strategy", str().enum("rolling-update", "recreate")),
	)),
	property("api_version", str()),
).named("KAgentExtension")

// buildKitExtensionDef is #/definitions/BuildKitExtension: Agent BuildKit deployment and orchestration extension.
var buildKitExtensionDef = object(
	property("deployment", object(
		property("replicas", object(
			property("min", integer()),
			property("max", integer()),
		)),
	)),
	property("container", object(
		property("image", str()),
		property("runtime", str().enum("docker", "podman", "containerd")),
		property("resources", object()),
	)),
).named("BuildKitExtension")

// drupalExtensionDef is #/definitions/DrupalExtension: Drupal LLM Platform integration extension.
var drupalExtensionDef = object(
	property("module", str().pattern(`^[a-z][a-z0-9_]*$`, "a Drupal machine name: lower-case letters, digits and _, starting with a letter")),
	property("service", str().pattern(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$`, "a Drupal service ID module.service, e.g. ai_agents.runner")),
	property("dependencies", array(str().pattern(`^[a-z][a-z0-9_]*$`, "a Drupal module machine name: lower-case letters, digits and _, starting with a letter"))),
	property("database", object(
		property("tables", array(str())),
		property("migrations", array(str())),
	)),
).named("DrupalExtension")

// libreChatExtensionDef is #/definitions/LibreChatExtension: LibreChat integration extension.
var libreChatExtensionDef = object(
	property("enabled", boolean()),
	property("agent_id", str()),
	property("endpoint", str()),
	property("authentication", object()),
).named("LibreChatExtension")

// mcpExtensionDef is #/definitions/MCPExtension: Model Context Protocol (MCP) extension.
var mcpExtensionDef = object(
	property("enabled", boolean()),
	property("server_type", str().enum("stdio", "sse", "websocket")),
	property("server_name", str()),
	property("config", object()),
	property("resources", array(object(
		property("uri", str().doc("Resource URI (e.g., file://, http://, custom://)")),
		property("name", str().doc("Resource display name")),
		property("description", str()),
		property("mimeType", str()),
	).require("uri", "name"))),
	property("prompts", array(object(
		property("name", str().doc("Prompt identifier")),
		property("description", str()),
		property("arguments", array(object(
			property("name", str()),
			property("description", str()),
			property("required", boolean()),
		).require("name"))),
	).require("name"))),
	property("tools", array(object(
		property("name", str().doc("Tool name")),
		property("description", str()),
		property("inputSchema", object()),
	).require("name"))),
).named("MCPExtension")

// langChainExtensionDef is #/definitions/LangChainExtension: LangChain framework integration extension.
var langChainExtensionDef = object(
	property("enabled", boolean()),
	property("tool_class", str()),
	property("chain_type", str().enum("llm", "retrieval", "agent", "sequential", "custom")),
	property("memory", object(
		property("type", str().enum("buffer", "summary", "conversation", "vector")),
		property("max_tokens", integer()),
	)),
).named("LangChainExtension")

// crewAIExtensionDef is #/definitions/CrewAIExtension: CrewAI framework integration extension.
var crewAIExtensionDef = object(
	property("enabled", boolean()),
	property("agent_type", str().enum("worker", "manager", "researcher", "analyst", "custom")),
	property("role", str()),
	property("goal", str()),
	property("backstory", str()),
	property("tools", array(str())),
).named("CrewAIExtension")

// openAIAgentsExtensionDef is #/definitions/OpenAIAgentsExtension: OpenAI Agents SDK integration extension.
var openAIAgentsExtensionDef = object(
	property("enabled", boolean()),
	property("agent_id", str()),
	property("instructions", str()),
	property("model", str().enum("gpt-4o", "gpt-4o-mini", "gpt-4-turbo", "gpt-3.5-turbo")),
	property("tools_mapping", array(object(
		property("ossa_capability", str().doc("OSSA capability name to map")),
		property("openai_tool_name", str()),
		property("description", str()),
		property("parameters", object()),
	).require("ossa_capability").closed())),
	property("sub_agents", array(object(
		property("agent_id", str().doc("OpenAI sub-agent identifier")),
		property("ossa_agent_ref", str().doc("Reference to OSSA agent (metadata.name or agent ID)")),
		property("handoff_conditions", array(str())),
		property("instructions", str()),
	).require("agent_id", "ossa_agent_ref").closed())),
	property("guardrails", object(
		property("enabled", boolean()),
		property("policies", array(str())),
		property("max_tool_calls", integer().minimum(1)),
		property("timeout_seconds", integer().minimum(1)),
	).closed()),
	property("memory", object(
		property("enabled", boolean()),
		property("type", str().enum("session", "persistent")),
		property("max_messages", integer().minimum(1)),
	).closed()),
	property("tracing", object(
		property("enabled", boolean()),
		property("provider", str().enum("langfuse", "langsmith", "custom")),
		property("endpoint", str()),
	).closed()),
).named("OpenAIAgentsExtension")

// cursorExtensionDef is #/definitions/CursorExtension: Cursor IDE agent integration extension.
var cursorExtensionDef = object(
	property("enabled", boolean()),
	property("agent_type", str().enum("composer", "chat", "background", "cloud")),
	property("workspace_config", object(
		property("rules_file", str()),
		property("context_files", array(str())),
		property("ignore_patterns", array(str())),
	)),
	property("capabilities", object(
		property("code_generation", boolean()),
		property("code_review", boolean()),
		property("refactoring", boolean()),
		property("testing", boolean()),
	)),
	property("model", object(
		property("provider", str().enum("openai", "anthropic", "custom")),
		property("name", str()),
	)),
).named("CursorExtension")

// langflowExtensionDef is #/definitions/LangflowExtension: Langflow workflow orchestration extension.
var langflowExtensionDef = object(
	property("enabled", boolean()),
	property("flow_id", str()),
	property("flow_name", str()),
	property("endpoint", str()),
	property("api_key", str()),
	property("components", array(object(
		property("id", str()),
		property("type", str()),
		property("name", str()),
	))),
	property("dataflow", object()),
).named("LangflowExtension")

// autoGenExtensionDef is #/definitions/AutoGenExtension: AutoGen multi-agent framework extension.
var autoGenExtensionDef = object(
	property("enabled", boolean()),
	property("agent_type", str().enum("assistant", "user_proxy", "groupchat", "custom")),
	property("system_message", str()),
	property("human_input_mode", str().enum("ALWAYS", "NEVER", "TERMINATE")),
	property("code_execution", object(
		property("enabled", boolean()),
		property("work_dir", str()),
		property("use_docker", boolean()),
	)),
	property("max_consecutive_auto_reply", integer().minimum(1)),
	property("groupchat", object(
		property("agents", array(str())),
		property("max_round", integer().minimum(1)),
	)),
).named("AutoGenExtension")

// vercelAIExtensionDef is #/definitions/VercelAIExtension: Vercel AI SDK integration extension.
var vercelAIExtensionDef = object(
	property("enabled", boolean()),
	property("runtime", str().enum("edge", "nodejs")),
	property("stream", boolean()),
	property("route", str()),
	property("tools", array(object(
		property("name", str()),
		property("description", str()),
		property("parameters", object()),
	))),
	property("experimental", object()),
).named("VercelAIExtension")

// llamaIndexExtensionDef is #/definitions/LlamaIndexExtension: LlamaIndex framework integration extension.
var llamaIndexExtensionDef = object(
	property("enabled", boolean()),
	property("agent_type", str().enum("query_engine", "chat_engine", "retriever", "custom")),
	property("llm", object(
		property("provider", str().enum("openai", "anthropic", "local", "custom")),
		property("model", str()),
		property("temperature", number().minimum(0).maximum(2)),
	)),
	property("vector_store", object(
		property("type", str().enum("pinecone", "weaviate", "chroma", "qdrant", "milvus", "custom")),
		property("config", object()),
	)),
	property("retrieval", object(
		property("top_k", integer().minimum(1)),
		property("similarity_top_k", integer().minimum(1)),
	)),
	property("tools", array(object(
		property("name", str()),
		property("type", str()),
	))),
).named("LlamaIndexExtension")

// langGraphExtensionDef is #/definitions/LangGraphExtension: LangGraph state machine agent extension.
var langGraphExtensionDef = object(
	property("enabled", boolean()),
	property("graph_name", str()),
	property("state_schema", object()),
	property("nodes", array(object(
		property("name", str()),
		property("function", str()),
	))),
	property("edges", array(object(
		property("from", str()),
		property("to", str()),
		property("condition", str()),
	))),
	property("checkpoint", object(
		property("enabled", boolean()),
		property("type", str().enum("memory", "sqlite", "postgres", "custom")),
	)),
).named("LangGraphExtension")

// anthropicExtensionDef is #/definitions/AnthropicExtension: Anthropic Claude API integration extension.
var anthropicExtensionDef = object(
	property("enabled", boolean()),
	property("model", str().enum("claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001", "claude-3-5-sonnet-20241022", "claude-3-5-haiku-20241022", "claude-3-opus-20240229", "claude-3-sonnet-20240229", "claude-3-haiku-20240307")),
	property("system", str()),
	property("max_tokens", integer().minimum(1).maximum(32000)),
	property("temperature", number().minimum(0).maximum(1)),
	property("tools", array(object(
		property("name", str()),
		property("description", str()),
		property("input_schema", object().doc("Tool input schema (JSON Schema)")),
	).require("name", "description", "input_schema"))),
	property("streaming", boolean()),
	property("stop_sequences", array(str())),
).named("AnthropicExtension")

// googleADKExtensionDef is #/definitions/GoogleADKExtension: Google Agent Development Kit (ADK) integration extension (v0.2.5).
var googleADKExtensionDef = object(
	property("enabled", boolean()),
	property("agent_type", str().enum("llm_agent", "sequential_agent", "parallel_agent", "loop_agent", "conditional_agent", "custom")),
	property("model", str()),
	property("instruction", str()),
	property("tools", array(object(
		property("name", str()),
		property("type", str().enum("function", "agent", "mcp_server")),
		property("config", object()),
	))),
	property("sub_agents", array(str())),
	property("session", object(
		property("service", str().enum("in_memory", "database", "vertex_ai")),
		property("state_schema", object()),
	)),
	property("memory", object(
		property("enabled", boolean()),
		property("service", str().enum("in_memory", "vertex_ai_rag")),
	)),
	property("callbacks", object(
		property("before_agent_callback", str()),
		property("after_agent_callback", str()),
		property("before_model_callback", str()),
		property("after_model_callback", str()),
	)),
).named("GoogleADKExtension")

// a2aExtensionDef is #/definitions/A2AExtension: Agent-to-Agent (A2A) protocol extension for inter-agent communication.
var a2aExtensionDef = object(
	property("enabled", boolean()),
	property("agent_card", object(
		property("name", str()),
		property("description", str()),
		property("url", str().format("uri")),
		property("version", str()),
		property("capabilities", array(str())),
		property("authentication", object(
			property("schemes", array(str().enum("bearer", "oauth2", "mtls", "apikey", "none"))),
		)),
		property("provider", object(
			property("organization", str()),
			property("url", str().format("uri")),
		)),
	)),
	property("supported_content_types", array(str())),
	property("skills", array(object(
		property("id", str()),
		property("name", str()),
		property("description", str()),
		property("input_modes", array(str().enum("text", "file", "data"))),
		property("output_modes", array(str().enum("text", "file", "data"))),
	))),
	property("streaming", str().enum("none", "response")),
	property("push_notifications", object(
		property("enabled", boolean()),
		property("webhook_url", str().format("uri")),
	)),
).named("A2AExtension")

// agentsMdExtensionDef is #/definitions/AgentsMdExtension: OpenAI agents.md repository-level agent guidance extension. Generates and consumes AGENTS.md files for AI coding agents. See https://agents.md and https://github.com/openai/agents.md.
var agentsMdExtensionDef = object(
	property("enabled", boolean()),
	property("generate", boolean()),
	property("output_path", str()),
	property("sections", object(
		property("dev_environment", agentsMdSectionDef),
		property("testing", agentsMdSectionDef),
		property("pr_instructions", agentsMdSectionDef),
		property("code_style", agentsMdSectionDef),
		property("security", agentsMdSectionDef),
		property("custom", array(object(
			property("title", str().doc("Section title/header")),
			property("content", str().doc("Section content in markdown format")),
		).require("title", "content"))),
	).closed()),
	property("sync", object(
		property("on_manifest_change", boolean()),
		property("include_comments", boolean()),
		property("watch", boolean()),
	).closed()),
	property("mapping", object(
		property("tools_to_dev_environment", boolean()),
		property("constraints_to_testing", boolean()),
		property("autonomy_to_pr_instructions", boolean()),
		property("role_from_agents_md", boolean()),
	).closed()),
	property("cursor_integration", boolean()),
	property("nested_files", array(object(
		property("path", str().doc("Subdirectory path for nested AGENTS.md")),
		property("inherit", boolean()),
		property("sections", object()),
	).require("path"))),
).named("AgentsMdExtension")

// agentsMdSectionDef is #/definitions/AgentsMdSection: Configuration for an individual AGENTS.md section.
var agentsMdSectionDef = object(
	property("enabled", boolean()),
	property("source", str()),
	property("custom", str()),
	property("title", str()),
	property("append", str()),
).closed().named("AgentsMdSection")

// securityDef is #/definitions/Security: Security configuration for agent operations.
var securityDef = object(
	property("authentication", object(
		property("required", boolean()),
		property("methods", array(str().enum("bearer", "oauth2", "mtls", "apikey", "jwt", "saml"))),
		property("mfa_required", boolean()),
	)),
	property("authorization", object(
		property("model", str().enum("rbac", "abac", "acl", "custom")),
		property("roles", array(str())),
		property("permissions", array(str())),
	)),
	property("encryption", object(
		property("in_transit", object(
			property("enabled", boolean()),
			property("tls_version", str().enum("1.2", "1.3")),
			property("cipher_suites", array(str())),
		)),
		property("at_rest", object(
			property("enabled", boolean()),
			property("algorithm", str().enum("aes-256-gcm", "aes-256-cbc", "chacha20-poly1305")),
			property("key_management", str().enum("kms", "vault", "hsm", "manual")),
		)),
	)),
	property("secrets", object(
		property("provider", str().enum("vault", "aws_secrets_manager", "azure_key_vault", "gcp_secret_manager", "kubernetes")),
		property("rotation", object(
			property("enabled", boolean()),
			property("interval_days", integer().minimum(1)),
		)),
	)),
	property("audit", object(
		property("enabled", boolean()),
		property("log_level", str().enum("minimal", "standard", "detailed")),
		property("retention_days", integer().minimum(1)),
		property("pii_redaction", boolean()),
	)),
	property("compliance", object(
		property("frameworks", array(str().enum("soc2", "hipaa", "gdpr", "fedramp", "pci-dss", "iso27001"))),
		property("data_residency", array(str())),
	)),
).closed().named("Security")

// reliabilityDef is #/definitions/Reliability: Reliability and resilience configuration.
var reliabilityDef = object(
	property("sla", object(
		property("availability_percent", number().minimum(0).maximum(100)),
		property("latency_p50_ms", number().minimum(0)),
		property("latency_p95_ms", number().minimum(0)),
		property("latency_p99_ms", number().minimum(0)),
		property("error_rate_percent", number().minimum(0).maximum(100)),
	)),
	property("circuit_breaker", object(
		property("enabled", boolean()),
		property("failure_threshold", integer().minimum(1)),
		property("timeout_seconds", number().minimum(0)),
		property("half_open_requests", integer().minimum(1)),
	)),
	property("health_check", object(
		property("enabled", boolean()),
		property("endpoint", str()),
		property("interval_seconds", integer().minimum(1)),
		property("timeout_seconds", integer().minimum(1)),
		property("unhealthy_threshold", integer().minimum(1)),
		property("healthy_threshold", integer().minimum(1)),
	)),
	property("failover", object(
		property("enabled", boolean()),
		property("strategy", str().enum("active-passive", "active-active", "round-robin")),
		property("fallback_agents", array(str())),
	)),
	property("disaster_recovery", object(
		property("enabled", boolean()),
		property("rpo_minutes", integer().minimum(0)),
		property("rto_minutes", integer().minimum(0)),
		property("backup_regions", array(str())),
	)),
).closed().named("Reliability")

// collaborationDef is #/definitions/Collaboration: Multi-agent collaboration and orchestration.
var collaborationDef = object(
	property("mode", str().enum("standalone", "collaborative", "orchestrated")),
	property("handoffs", array(object(
		property("target_agent", str()),
		property("conditions", array(str())),
		property("context_transfer", str().enum("full", "partial", "minimal")),
	))),
	property("delegation", object(
		property("enabled", boolean()),
		property("allowed_agents", array(str())),
		property("max_depth", integer().minimum(1)),
	)),
	property("communication", object(
		property("protocols", array(str().enum("a2a", "mcp", "http", "grpc", "websocket"))),
		property("message_format", str().enum("json", "protobuf", "msgpack")),
	)),
	property("orchestration", object(
		property("role", str().enum("orchestrator", "worker", "both")),
		property("workflow_engine", str().enum("langgraph", "autogen", "crewai", "custom")),
	)),
).closed().named("Collaboration")

// safetyDef is #/definitions/Safety: Safety and content moderation configuration.
var safetyDef = object(
	property("content_filtering", object(
		property("enabled", boolean()),
		property("categories", array(str().enum("hate", "violence", "sexual", "self-harm", "profanity", "pii"))),
		property("threshold", str().enum("low", "medium", "high")),
		property("action", str().enum("block", "warn", "log")),
	)),
	property("pii_detection", object(
		property("enabled", boolean()),
		property("types", array(str().enum("email", "phone", "ssn", "credit_card", "ip_address", "name", "address"))),
		property("action", str().enum("redact", "block", "warn", "log")),
	)),
	property("rate_limiting", object(
		property("enabled", boolean()),
		property("requests_per_minute", integer().minimum(1)),
		property("requests_per_hour", integer().minimum(1)),
		property("burst_limit", integer().minimum(1)),
	)),
	property("guardrails", object(
		property("enabled", boolean()),
		property("policies", array(object(
			property("name", str()),
			property("type", str().enum("input", "output", "both")),
			property("rules", array(str())),
		))),
		property("max_tool_calls", integer().minimum(1)),
		property("max_execution_time_seconds", integer().minimum(1)),
	)),
	property("human_in_loop", object(
		property("enabled", boolean()),
		property("triggers", array(str().enum("high_risk_action", "low_confidence", "policy_violation", "user_request"))),
		property("timeout_seconds", integer().minimum(1)),
	)),
).closed().named("Safety")

// deploymentDef is #/definitions/Deployment: Deployment and lifecycle management configuration.
var deploymentDef = object(
	property("strategy", str().enum("rolling", "blue-green", "canary", "recreate")),
	property("canary", object(
		property("enabled", boolean()),
		property("initial_traffic_percent", number().minimum(0).maximum(100)),
		property("increment_percent", number().minimum(0).maximum(100)),
		property("interval_minutes", integer().minimum(1)),
		property("success_criteria", object(
			property("error_rate_threshold", number().minimum(0).maximum(100)),
			property("latency_p95_threshold_ms", number().minimum(0)),
		)),
	)),
	property("rollback", object(
		property("enabled", boolean()),
		property("automatic", boolean()),
		property("triggers", array(str().enum("error_rate", "latency", "health_check", "manual"))),
	)),
	property("versioning", object(
		property("scheme", str().enum("semver", "timestamp", "git_sha")),
		property("compatibility", str().enum("backward", "forward", "both", "none")),
	)),
	property("testing", object(
		property("dry_run", boolean()),
		property("shadow_mode", boolean()),
		property("test_traffic_percent", number().minimum(0).maximum(100)),
	)),
	property("lifecycle", object(
		property("startup_probe", object(
			property("enabled", boolean()),
			property("initial_delay_seconds", integer().minimum(0)),
			property("period_seconds", integer().minimum(1)),
			property("failure_threshold", integer().minimum(1)),
		)),
		property("readiness_probe", object(
			property("enabled", boolean()),
			property("period_seconds", integer().minimum(1)),
		)),
		property("liveness_probe", object(
			property("enabled", boolean()),
			property("period_seconds", integer().minimum(1)),
		)),
		property("graceful_shutdown", object(
			property("enabled", boolean()),
			property("timeout_seconds", integer().minimum(0)),
		)),
	)),
).closed().named("Deployment")

// reasoningDef is #/definitions/Reasoning: Reasoning strategy configuration for agent decision-making (ReAct, CoT, ToT).
var reasoningDef = object(
	property("strategy", str().enum("react", "cot", "tree_of_thought", "custom")),
	property("max_steps", integer().minimum(1).maximum(100)),
	property("max_depth", integer().minimum(1).maximum(20)),
	property("trace_enabled", boolean()),
	property("export_format", str().enum("otel", "json", "markdown")),
	property("self_reflection", object(
		property("enabled", boolean()),
		property("trigger", str().enum("every_step", "on_failure", "on_uncertainty")),
		property("threshold", number().minimum(0).maximum(1)),
	)),
).closed().named("Reasoning")

// promptsDef is #/definitions/Prompts: Structured prompt management with templating and versioning.
var promptsDef = object(
	property("system", object(
		property("template", str()),
		property("version", str().pattern(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$`, "a version MAJOR.MINOR.PATCH such as 1.0.0 (no pre-release or build suffix)")),
		property("variables", object().additional(str())),
	)),
	property("user", object(
		property("template", str()),
		property("variables", object().additional(str())),
	)),
	property("few_shot_examples", array(object(
		property("input", str().doc("Example user input")),
		property("output", str().doc("Expected agent output")),
		property("context", str()),
	).require("input", "output")).maxItems(20)),
	property("registry", object(
		property("enabled", boolean()),
		property("provider", str().enum("local", "langfuse", "promptlayer", "custom")),
		property("endpoint", str().format("uri")),
	)),
).closed().named("Prompts")

// knowledgeGraphDef is #/definitions/KnowledgeGraph: Knowledge graph integration for entity relationships and persistent memory.
var knowledgeGraphDef = object(
	property("enabled", boolean()),
	property("provider", str().enum("neo4j", "neptune", "dgraph", "memgraph", "custom")),
	property("connection", object(
		property("endpoint", str().doc("Connection endpoint URI (e.g., bolt://localhost:7687)")),
		property("database", str()),
		property("credentials_ref", str()),
	).require("endpoint")),
	property("schema", object(
		property("entity_types", array(str())),
		property("relationship_types", array(str())),
	)),
	property("sync", object(
		property("mode", str().enum("real_time", "batch", "on_demand")),
		property("batch_size", integer().minimum(1)),
		property("interval", str().pattern(`^\d+[smh]$`, "a whole number and a unit s, m or h, e.g. 60s, 5m or 1h")),
	)),
).closed().named("KnowledgeGraph")

// identityDef is #/definitions/Identity: Agent identity configuration for tracing and observability. Defines how runtime identifiers are generated for debugging multi-instance deployments.
var identityDef = object(
	property("instance_id", object(
		property("generation", str().enum("uuid_v4", "ulid", "custom").doc("ID generation strategy")),
		property("scope", str().enum("pod", "process", "request").doc("When to generate new instance ID")),
		property("custom_generator", str()),
	).require("generation", "scope").doc("Unique identifier for this agent instance (distinguishes same agent on different pods)")),
	property("session_id", object(
		property("generation", str().enum("uuid_v4", "ulid", "custom")),
		property("scope", str().enum("conversation", "workflow", "batch")),
	)),
	property("interaction_id", object(
		property("generation", str().enum("uuid_v4", "ulid", "custom")),
		property("scope", str().enum("turn", "request").doc("Interaction boundary")),
	).require("generation", "scope").doc("Unique identifier for each prompt/response turn (critical for log correlation)")),
	property("propagation", object(
		property("inherit_session", boolean()),
		property("trace_context", str().enum("w3c", "b3", "jaeger", "none")),
		property("baggage", boolean()),
	)),
).require("instance_id", "interaction_id").closed().named("Identity")
