set pagination off
set confirm off
handle SIGUSR1 SIGUSR2 SIGPIPE SIGALRM SIGIO SIGPROF nostop noprint pass
set $n = 0
set $m = 0
# 1: a cached (IOMMU slow-path) write whose IOVA range crosses a 4 KiB page
break address_space_write_cached_slow if (((*(unsigned long*)($rdi+8)) + $rsi) & 0xfff) + $rcx > 0x1000
commands 1
  silent
  set $n = $n + 1
  printf "=== HIT %d: address_space_write_cached_slow(cache=%#lx, addr=%#lx, len=%lu): IOVA %#lx..%#lx, data:\n", $n, $rdi, $rsi, $rcx, *(unsigned long*)($rdi+8)+$rsi, *(unsigned long*)($rdi+8)+$rsi+$rcx-1
  x/2wx $rdx
  bt 8
  set $m = 0
  enable 2
  continue
end
# 2: the RAM stores that follow (memmove into guest RAM), armed only after a hit
break 'memmove@plt' if $rdx <= 8
commands 2
  silent
  set $m = $m + 1
  printf "    memmove(dst=%#lx, src=%#lx, n=%lu) thread %d: src bytes:\n", $rdi, $rsi, $rdx, $_thread
  x/2wx $rsi
  printf "      dst before the store:\n"
  x/2wx $rdi
  if $m >= 4
    disable 2
  end
  continue
end
disable 2
continue
