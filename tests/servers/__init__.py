"""Real servers for tests: a vLLM OpenAI-compatible server and a fault-injecting proxy."""
