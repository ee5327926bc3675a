"""The embedded demo model (`simpe train-demo-model`): ``train`` (the training loop, its schedule, exact resume),
``data`` (the splits as lines, the joint SentencePiece model, the truecaser, token-budget batches) and ``card`` (the
folder once trained: checkpoint averaging, save_pretrained, scores, the model card). Import from the modules."""
