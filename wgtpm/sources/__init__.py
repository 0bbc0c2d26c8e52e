"""Where modules come from: the proxy protocol and the direct sources.

Every source implements :class:`wgtpm.sources.Source`; the resolver, cache and
verification above them do not know which one they talk to.

==================  ================================================================
module              what
==================  ================================================================
``_base``           the :class:`Source` protocol, :class:`RevInfo`, :class:`FileRequest`
``chain``           ``WGTPROXY``: entries tried in order (``,`` / ``|``), ``WGTPRIVATE``;
                    ``from_env(http, environ, cache)`` builds it
``proxy``           the proxy protocol over http(s) and ``file://``
``direct``          ``direct``: each path to the source of its host
``hosts``           the one table host -> source module (``from_host(http, meta)``)
``_hosted``         what the hosted sources share: stores, env, paths, tags, index
                    synthesis, byte hand-off, error translation, JSON checks
``github``          GitHub releases
``huggingface``     Hugging Face model repositories (the Hub API through wgtpm's
                    own HTTP client)
``pawhub``          the PAW program hub
==================  ================================================================

Sources are handed what they share (the HTTP client, the metadata store);
they never build the module cache or an HTTP client of their own.
"""

from ._base import FileRequest, RevInfo, Source

__all__ = ["FileRequest", "RevInfo", "Source"]
