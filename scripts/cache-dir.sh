# Sourced by the scripts that cache slow inputs: sets $cache, the cache
# directory (README, "Caches").
if [ -n "${SIVSHM_CACHE:-}" ]; then
	cache=$SIVSHM_CACHE
elif [ "$(id -u)" -eq 0 ]; then
	cache=/var/cache/sivshm-kvm
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/sivshm-kvm
fi
