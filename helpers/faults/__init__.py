"""Faults on purpose: break a connection, the control plane or a cache, and see what code does.

* :mod:`.tcp_proxy`: a loopback proxy in front of the API server that cuts,
  resets, refuses, stalls or slows connections on demand (a watch that dies
  mid-stream, a peer that went to sleep, a request that takes a minute).
* :mod:`.control_plane`: stop and start the local control plane's API server
  (SIGKILL or SIGTERM), as a kubelet restarts a static Pod.
* :mod:`.stale_cache`: hold an informer's cache behind the API server and move
  an object on behind its back, so a write from the cache gets 409 every time.
* :mod:`.expired_watch`: a held watch that comes back from a version the API
  server no longer serves, so it meets 410 and the informer lists again (any
  cluster: nothing restarted, no etcd access).

The course's own tests use them, and so can a learner's tests of their own
controller (chapters 09a and 09b).
"""
