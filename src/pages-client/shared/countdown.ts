/** "Expires in 4:59", "Expires in 2 h 05 min", "Expires in 6 days 23 h": coarser as the deadline is further. */
export function countdownText(remainingMs: number): string {
  if (remainingMs <= 0) return 'Expired';
  const total = Math.ceil(remainingMs / 1000);
  const days = Math.floor(total / 86400);
  const hours = Math.floor((total % 86400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (days > 0) return `Expires in ${days} ${days === 1 ? 'day' : 'days'} ${hours} h`;
  if (hours > 0) return `Expires in ${hours} h ${String(minutes).padStart(2, '0')} min`;
  return `Expires in ${minutes}:${String(seconds).padStart(2, '0')}`;
}
