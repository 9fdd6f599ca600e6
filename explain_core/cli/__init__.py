"""The ``explain-core`` command: ``app`` (:mod:`.app`), ``report`` (:mod:`.report`), ``audit`` (:mod:`.audit`),
over the arguments and loaders they share (:mod:`.common`); :func:`.main.main` parses and dispatches."""
