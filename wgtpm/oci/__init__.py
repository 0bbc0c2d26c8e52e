"""OCI registries as sources and publish targets (docs/guides/oci.md).

==================  ================================================================
module              what
==================  ================================================================
``naming``          module path -> repository name, version -> tag (one way, one to one)
``manifest``        the release format: build (publish) and parse (read) image manifests;
                    an index synthesised for artifacts pushed by other tools
``auth``            credentials: config.json (auths, helpers), REGISTRY_AUTH_FILE, netrc
``client``          the distribution-spec client over :class:`wgtpm.httpclient.HttpClient`:
                    Bearer/Basic challenges, tokens per scope, tags, manifests, blobs
==================  ================================================================

Nothing here imports httpx at import time; the HTTP client does, on its first request.
"""
