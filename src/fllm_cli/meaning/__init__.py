"""What a request means: sentence embeddings that run offline, and the relevance they give."""
