"""Training for sparse explanations (SEV paper §4): the losses (:mod:`.losses`, eqs. 5-8), the training loop and each
model family's schedule (:mod:`.training`), and a model before vs after (:mod:`.compare`)."""
