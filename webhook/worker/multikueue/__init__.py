"""The manager's side of MultiKueue that talks to worker clusters (`remote`): one client per
MultiKueueCluster, its watches and its connection state. The plans it carries out are pure and
live in `webhook.worker.admissionchecks.multikueue`; the reconciler is `reconcilers.multikueue`.
"""
