"""Faults on purpose: break a connection or the control plane, and watch what the code does.

* :mod:`.tcp_proxy`: a loopback proxy in front of the API server that cuts,
  resets, refuses or stalls connections on demand (a watch that dies
  mid-stream, a peer that went to sleep).
* :mod:`.control_plane`: stop and start the local control plane's API server
  (SIGKILL or SIGTERM), as a kubelet restarts a static Pod.

The course's own tests use them, and so can a learner's tests of their own
controller (chapter 09).
"""
