// The intrusive lists of the slow paths, written once (tcmalloc's internal/linked_list.h). A
// list is a pointer to its first node, nullptr when empty; a node holds its own links: `next`,
// and `prev` as well in a doubly linked list. The lock-free lists (atomic heads) are not these.
#pragma once

namespace poolalloc::internal {

// Singly linked lists, through `next`.

template <class T>
void list_push(T*& head, T& node) {
  node.next = head;
  head = &node;
}

// The first node, taken off the list; nullptr when it is empty.
template <class T>
T* list_pop(T*& head) {
  T* const node = head;
  if (node != nullptr) head = node->next;
  return node;
}

// Puts the nodes of `chain`, in their order, in front of the list's.
template <class T>
void list_splice(T*& head, T* chain) {
  if (chain == nullptr) return;
  T* last = chain;
  while (last->next != nullptr) last = last->next;
  last->next = head;
  head = chain;
}

// Doubly linked lists, through `next` and `prev` (nullptr before the first node).

template <class T>
void dlist_push(T*& head, T& node) {
  node.prev = nullptr;
  node.next = head;
  if (head != nullptr) head->prev = &node;
  head = &node;
}

template <class T>
void dlist_unlink(T*& head, T& node) {
  (node.prev != nullptr ? node.prev->next : head) = node.next;
  if (node.next != nullptr) node.next->prev = node.prev;
}

}  // namespace poolalloc::internal
