"""The sandboxed worker process that holds an uploaded model: :mod:`.confine` (the layers: limits, namespaces,
Landlock, seccomp), :mod:`.worker` (the process), :mod:`.loaders` (loading a file inside it), :mod:`.protocol` (the
pipe: pickled requests in, plain data out), :mod:`.client` (the server's side of one process) and :mod:`.model`
(:class:`~explain_core.intake.sandbox.model.SandboxedModel`, the model as the server sees it)."""
