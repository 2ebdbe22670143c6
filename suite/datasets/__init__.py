"""Data for the workloads: downloading with checksum verification (:mod:`.fetch`) and the
remote side of offloaded preprocessing, TensorFlow's tf.data service (:mod:`.service`)."""
