"""Entry points for other tools, each over the public :class:`~graphrecall.GraphRAG` API and
each behind its own optional extra (importing graphrecall imports none of them):

* :mod:`graphrecall.integrations.langchain`: :class:`GraphRecallRetriever`, a LangChain
  ``BaseRetriever`` (``pip install graphrecall[langchain]``);
* :mod:`graphrecall.integrations.llamaindex`: :class:`GraphRecallRetriever`, a LlamaIndex
  ``BaseRetriever`` (``pip install graphrecall[llamaindex]``);
* :mod:`graphrecall.integrations.mcp_server`: ``graphrecall mcp INDEX``, a Model Context
  Protocol server (``pip install graphrecall[mcp]``);
* :mod:`graphrecall.integrations.items`: the flat, JSON-ready items all of them return.
"""
