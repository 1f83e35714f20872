# Customer Support

## Greeting
This playbook greets the user and asks for their order number.

### Triggers
- At the beginning

### Steps
- Greet the user and ask for their order number
- If user provides an invalid order number
  - Ask them to try again
- Look up order status
- Tell the user their order status

### Notes
- Be polite and professional
